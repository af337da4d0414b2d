"""A judge check: the calibration cases of a set of questions run through one judge, with the figures.

Used by ``pytest-beam judge-check`` (every case of a mode's questions) and by ``--beam-judge-check``
inside a benchmark run (a sample of the run's own questions' cases). The result is kept in the
run's record (``RunRecord.judge_check``) and shown in the summary, the report and the HTML page.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from ..data.records import ProbingQuestion, ReferenceAnswer
from .agreement import AgreementStats, agreement_by_ability
from .calibration import CalibrationCase, CaseVerdict, build_cases, judge_cases, sample_cases
from .judge import JudgeModel

__all__ = ["DEFAULT_BAR", "JudgeCheck", "run_judge_check"]

# The bar on Cohen's kappa under which a run warns that its judge is not to be trusted.
# TODO(measure): chosen from the full set's calibration.
DEFAULT_BAR = 0.6


class JudgeCheck(BaseModel):
    """The judge's calibration, as kept in a record."""

    model_config = ConfigDict(extra="ignore")

    judge_model: str | None = None
    profile: str
    judge_runs: int = 1
    bar: float = Field(DEFAULT_BAR, description="The kappa under which the judge is reported below the bar")
    sample: int | None = Field(None, description="Most cases judged (None: every judged case)")
    cases: list[CalibrationCase] = Field(default_factory=list, description="Every case built, the excluded ones too")
    verdicts: list[CaseVerdict] = Field(default_factory=list)
    abilities: dict[str, AgreementStats] = Field(default_factory=dict)
    overall: AgreementStats
    seconds: float = 0.0

    @property
    def below_bar(self) -> bool:
        """Kappa under the bar, or undefined (the judge said one thing to every case)."""
        return self.overall.kappa is None or self.overall.kappa < self.bar

    @property
    def excluded(self) -> list[CalibrationCase]:
        return [c for c in self.cases if c.excluded is not None]

    def warning(self) -> str | None:
        """One line when the judge is below the bar, else None."""
        if not self.below_bar:
            return None
        kappa = "undefined (it gave every case the same verdict)" if self.overall.kappa is None \
            else f"{self.overall.kappa:.2f}"
        return (f"the judge agrees with BEAM's reference answers at kappa {kappa}, below the bar of {self.bar:.2f}: "
                "its scores are not to be trusted (pytest-beam judge-check measures it on a whole set)")


def run_judge_check(questions: Iterable[ProbingQuestion], references: Mapping[str, ReferenceAnswer],
                    judge: JudgeModel, *, profile: str, judge_runs: int = 1, sample: int | None = None,
                    bar: float = DEFAULT_BAR, judge_model: str | None = None,
                    progress: Callable[[int, int], None] | None = None) -> JudgeCheck:
    """Build the cases of ``questions``, judge ``sample`` of them (all by default), and measure."""
    questions = list(questions)
    by_id = {q.id: q for q in questions}
    cases = build_cases(questions, references)
    chosen = sample_cases(cases, sample)
    started = time.monotonic()
    verdicts = judge_cases(chosen, by_id, judge, profile, judge_runs, progress)
    by_case = {v.case_id: v for v in verdicts}
    abilities, overall = agreement_by_ability(chosen, by_case)
    return JudgeCheck(judge_model=judge_model, profile=profile, judge_runs=judge_runs, bar=bar, sample=sample,
                      cases=cases, verdicts=verdicts, abilities=abilities, overall=overall,
                      seconds=time.monotonic() - started)

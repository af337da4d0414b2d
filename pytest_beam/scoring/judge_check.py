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
from .judge_bars import DEFAULT_BAR, DEFAULT_FAIL_BAR  # why these values: judge_bars.py

__all__ = ["DEFAULT_BAR", "DEFAULT_FAIL_BAR", "JudgeCheck", "run_judge_check"]


class JudgeCheck(BaseModel):
    """The judge's calibration, as kept in a record."""

    model_config = ConfigDict(extra="ignore")

    judge_model: str | None = None
    profile: str
    judge_runs: int = 1
    bar: float = Field(DEFAULT_BAR, description="The kappa under which the judge is reported below the bar")
    fail_bar: float = Field(DEFAULT_FAIL_BAR, description="The share of right answers (references, and 'I don't "
                            "know' to abstention) failed above which the judge is reported below the bar")
    sample: int | None = Field(None, description="Most cases judged (None: every judged case)")
    cases: list[CalibrationCase] = Field(default_factory=list, description="Every case built, the excluded ones too")
    verdicts: list[CaseVerdict] = Field(default_factory=list)
    abilities: dict[str, AgreementStats] = Field(default_factory=dict)
    overall: AgreementStats
    seconds: float = 0.0

    @property
    def right_answer_fails(self) -> tuple[int, int]:
        """(failed, judged) over the rubric cases that should pass: BEAM's reference answers on their own
        items, and "I don't know" to an abstention question (the answer its rubric asks for)."""
        right = {c.id for c in self.cases if c.expected_pass and c.kind in ("reference", "dont_know")}
        judged = [v for v in self.verdicts if v.case_id in right]
        return sum(1 for v in judged if not v.judged_pass), len(judged)

    @property
    def right_answer_fail_rate(self) -> float | None:
        failed, judged = self.right_answer_fails
        return failed / judged if judged else None

    @property
    def kappa_below_bar(self) -> bool:
        """Kappa under the bar, or undefined (the judge said one thing to every case)."""
        return self.overall.kappa is None or self.overall.kappa < self.bar

    @property
    def fails_above_bar(self) -> bool:
        rate = self.right_answer_fail_rate
        return rate is not None and rate > self.fail_bar

    @property
    def below_bar(self) -> bool:
        return self.kappa_below_bar or self.fails_above_bar

    @property
    def excluded(self) -> list[CalibrationCase]:
        return [c for c in self.cases if c.excluded is not None]

    def warning(self) -> str | None:
        """One line when the judge is below the bar, else None."""
        if not self.below_bar:
            return None
        kappa = "undefined (it gave every case the same verdict)" if self.overall.kappa is None \
            else f"{self.overall.kappa:.2f}"
        failed, judged = self.right_answer_fails
        why = []
        if self.kappa_below_bar:
            why.append(f"agrees with BEAM's reference answers at kappa {kappa}, below the bar of {self.bar:.2f}")
        if self.fails_above_bar:
            why.append(f"fails {failed} of {judged} right answers on their rubric items "
                       f"({failed / judged:.2f}, above the bar of {self.fail_bar:.2f})")
        return (f"the judge {' and '.join(why)}: its scores are not to be trusted "
                "(pytest-beam judge-check measures it on a whole set)")


def run_judge_check(questions: Iterable[ProbingQuestion], references: Mapping[str, ReferenceAnswer],
                    judge: JudgeModel, *, profile: str, judge_runs: int = 1, sample: int | None = None,
                    bar: float = DEFAULT_BAR, fail_bar: float = DEFAULT_FAIL_BAR, judge_model: str | None = None,
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
    return JudgeCheck(judge_model=judge_model, profile=profile, judge_runs=judge_runs, bar=bar, fail_bar=fail_bar,
                      sample=sample,
                      cases=cases, verdicts=verdicts, abilities=abilities, overall=overall,
                      seconds=time.monotonic() - started)

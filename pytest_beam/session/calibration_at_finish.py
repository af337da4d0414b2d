"""``--beam-judge-check``: the judge's calibration at the end of a benchmark run, on the run's own questions.

Run on the controller (or the only process) after the questions, before the embedded model
stops: a sample of the calibration cases of the questions that ran goes through the run's own
judge (the same endpoint, cache, cassette and spend cap), metered apart, so the summary can put
"how far to trust these scores" beside the scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from ..llm import ModelClient
    from ..llm.meter import Snapshot
    from ..scoring.judge_check import JudgeCheck
    from ..settings import Settings

DEFAULT_SAMPLE = 24  # cases of "on" and "auto": every kind, a few minutes on the embedded model


def sample_size(settings: Settings) -> int | bool | None:
    """False: no check; None: every case; N: at most N cases."""
    spec = settings.judge_check
    if spec == "off":
        return False
    if spec == "auto":
        return DEFAULT_SAMPLE if judge_is_embedded(settings) else False
    if spec == "on":
        return DEFAULT_SAMPLE
    if spec == "all":
        return None
    return int(spec)


def judge_is_embedded(settings: Settings) -> bool:
    """The judge is (or, before the run starts it, will be) the embedded model; a replay goes by
    the model its cassette was recorded with."""
    from ..llm.embedded import MODEL_NAME
    from .endpoint import EMBEDDED, wants_embedded

    judge = settings.role_models()["judge"]
    if judge == MODEL_NAME:
        return True
    return not settings.replaying and wants_embedded(settings) and judge in (None, EMBEDDED)


@dataclass
class SessionJudgeCheck:
    """What the check left for the record: the check and its usage, or the one-line reason it failed."""

    check: JudgeCheck | None = None
    usage: Snapshot | None = None
    error: str | None = None


def run_session_judge_check(settings: Settings, bench: BenchmarkSet, run_client: Callable[[], ModelClient],
                            question_ids: set[str], say: Callable[[str], None]) -> SessionJudgeCheck | None:
    """The check on the calibration cases of ``question_ids`` through the run's own client (its
    endpoint, cache, cassette and spend cap; made only if the check runs), metered apart; None when
    it is off or nothing ran."""
    size = sample_size(settings)
    if size is False:
        return None
    questions = [q for q in bench.questions if q.id in question_ids]
    if not questions:
        return None
    from ..llm import BudgetExceeded, CassetteMiss, Meter, ModelEndpointError
    from ..scoring.judge_check import run_judge_check

    client = run_client().sibling(Meter())
    say(f"judge check: calibrating the judge on BEAM's reference answers of the {len(questions)} question(s) that ran")

    def progress(done: int, total: int) -> None:
        if done == total or done % 5 == 0:
            say(f"judge check: {done}/{total} cases judged")

    try:
        check = run_judge_check(questions, bench.references, client, profile=settings.scorer,
                                judge_runs=settings.judge_runs, sample=size, bar=settings.judge_bar,
                                fail_bar=settings.judge_fail_bar,
                                judge_model=settings.role_models()["judge"], progress=progress)
    except (ModelEndpointError, BudgetExceeded, CassetteMiss) as exc:
        return SessionJudgeCheck(usage=client.meter.snapshot(), error=f"{type(exc).__name__}: {exc}")
    return SessionJudgeCheck(check=check, usage=client.meter.snapshot())

"""The scorer's entry point: one answer to one probing question -> :class:`QuestionScore`."""

from __future__ import annotations

from ..data.records import ProbingQuestion
from .event_ordering import score_event_ordering
from .judge import JudgeModel, score_rubric
from .scores import QuestionScore, ScorerMode

__all__ = ["SCORER_MODES", "score_question"]

SCORER_MODES: tuple[ScorerMode, ...] = ("default", "upstream", "omnimemeval")


def score_question(question: ProbingQuestion, answer: str, judge: JudgeModel, mode: ScorerMode,
                   judge_runs: int = 1) -> QuestionScore:
    """Score ``answer`` to ``question`` with the judge model, in ``mode`` ("default", "upstream" or "omnimemeval").

    event_ordering questions go to the event-ordering metric (yes/no alignment calls, no rubric
    judge calls); every other ability to the rubric judge (one call per rubric item). Every call is
    made with ``role="judge"``. ``judge_runs`` N > 1 judges every rubric item N times (each repeat
    its own cached call) and scores the mean; an event-ordering alignment is likewise asked N
    times and scores the mean of its repeats. Exceptions from the judge model propagate; a reply
    with no text scores its item 0 and flags ``parse_error``.
    """
    if mode not in SCORER_MODES:
        raise ValueError(f"unknown scorer mode {mode!r}; expected one of {SCORER_MODES}")
    if mode == "omnimemeval":  # the profile's own rules: scoring/omnimemeval.py, scoring/profiles.py
        from .omnimemeval import score_question_omnimemeval

        return score_question_omnimemeval(question, answer, judge, judge_runs)
    if question.ability == "event_ordering":
        return score_event_ordering(question, answer, judge, mode, judge_runs)
    return score_rubric(question, answer, judge, mode, judge_runs)

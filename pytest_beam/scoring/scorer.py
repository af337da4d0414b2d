"""The scorer's entry point: one answer to one probing question -> :class:`QuestionScore`."""

from __future__ import annotations

from ..data.records import ProbingQuestion
from .judge import JudgeModel
from .profile import ScoringProfile
from .profiles import get_profile
from .scores import QuestionScore

__all__ = ["no_answer_score", "score_answer", "score_question"]


def score_question(question: ProbingQuestion, answer: str, judge: JudgeModel, mode: str | ScoringProfile,
                   judge_runs: int = 1) -> QuestionScore:
    """Score ``answer`` to ``question`` with the judge model under the profile ``mode`` (a name of
    ``names.PROFILE_NAMES`` or a profile object): see :meth:`ScoringProfile.score`. Exceptions from
    the judge model propagate; a reply with no text scores its item 0 and flags ``parse_error``."""
    return get_profile(mode).score(question, answer, judge, judge_runs)


def no_answer_score(question: ProbingQuestion, mode: str | ScoringProfile) -> QuestionScore:
    """The score of an answer the system did not give (``system.NO_ANSWER_FLAGS``): 0, no judge call."""
    events = question.ability == "event_ordering"
    return QuestionScore(question_id=question.id, ability=question.ability, mode=get_profile(mode).name, score=0.0,
                         judge_calls=0, event_f1=0.0 if events else None, event_tau_norm=0.0 if events else None)


def score_answer(question: ProbingQuestion, answer: str, judge: JudgeModel, mode: str | ScoringProfile,
                 judge_runs: int = 1, *, gave_no_answer: bool = False) -> QuestionScore:
    """The one way a system's answer is scored, in the run and in ``pytest-beam rejudge`` alike: an
    answer the system flagged as none (``gave_no_answer``) scores 0 unjudged, any other is judged."""
    if gave_no_answer:
        return no_answer_score(question, mode)
    return score_question(question, answer, judge, mode, judge_runs)

"""The scorer's entry point: one answer to one probing question -> :class:`QuestionScore`."""

from __future__ import annotations

from ..data.records import ProbingQuestion
from .judge import JudgeModel
from .profile import ScoringProfile
from .profiles import get_profile
from .scores import QuestionScore

__all__ = ["score_question"]


def score_question(question: ProbingQuestion, answer: str, judge: JudgeModel, mode: str | ScoringProfile,
                   judge_runs: int = 1) -> QuestionScore:
    """Score ``answer`` to ``question`` with the judge model under the profile ``mode`` (a name of
    ``names.PROFILE_NAMES`` or a profile object): see :meth:`ScoringProfile.score`. Exceptions from
    the judge model propagate; a reply with no text scores its item 0 and flags ``parse_error``."""
    return get_profile(mode).score(question, answer, judge, judge_runs)

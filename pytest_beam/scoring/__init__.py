"""Scoring: BEAM's judge (ported, prompts word for word), the scoring profiles, per-question scores.

The names below load their module on first use (PEP 562), so importing a leaf of this package
(``scoring.profile_names`` for the settings table) does not load the scorer, pydantic records and numpy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_WHERE = {
    "FLAGS": "scores", "EventOrderingDetail": "scores", "ItemScore": "scores", "LineMatch": "scores",
    "QuestionScore": "scores", "ScorerMode": "scores", "passes": "scores",
    "JUDGE_ROLE": "judge", "JudgeModel": "judge", "JudgeReply": "judge", "JudgeText": "judge",
    "parse_judge_json": "judge",
    "align_lines": "event_ordering",
    "EventOrderingMetrics": "metrics", "event_ordering_metrics": "metrics", "evidence_recall": "metrics",
    "kendall_tau_b": "metrics",
    "score_question": "scorer",
    "PROFILE_NAMES": "profile_names", "ProfileName": "profile_names",
    "ScoringProfile": "profiles", "get_profile": "profiles",
}
__all__ = sorted(_WHERE)

if TYPE_CHECKING:
    from .event_ordering import align_lines
    from .judge import JUDGE_ROLE, JudgeModel, JudgeReply, JudgeText, parse_judge_json
    from .metrics import EventOrderingMetrics, event_ordering_metrics, evidence_recall, kendall_tau_b
    from .profile_names import PROFILE_NAMES, ProfileName
    from .profiles import ScoringProfile, get_profile
    from .scorer import score_question
    from .scores import FLAGS, EventOrderingDetail, ItemScore, LineMatch, QuestionScore, ScorerMode, passes


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value

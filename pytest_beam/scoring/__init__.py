"""Scoring: BEAM's judge (ported, prompts word for word), the event-ordering metric, per-question scores."""

from .event_ordering import align_lines, answer_lines, score_event_ordering
from .judge import JUDGE_ROLE, JudgeModel, JudgeReply, JudgeText, fill_judge_prompt, parse_judge_json, score_rubric
from .metrics import EventOrderingMetrics, event_ordering_metrics, evidence_recall, kendall_tau_b
from .scorer import SCORER_MODES, score_question
from .scores import FLAGS, EventOrderingDetail, ItemScore, LineMatch, QuestionScore, ScorerMode

__all__ = [
    "FLAGS",
    "JUDGE_ROLE",
    "SCORER_MODES",
    "EventOrderingDetail",
    "EventOrderingMetrics",
    "ItemScore",
    "JudgeModel",
    "JudgeReply",
    "JudgeText",
    "LineMatch",
    "QuestionScore",
    "ScorerMode",
    "align_lines",
    "answer_lines",
    "event_ordering_metrics",
    "evidence_recall",
    "fill_judge_prompt",
    "kendall_tau_b",
    "parse_judge_json",
    "score_event_ordering",
    "score_question",
    "score_rubric",
]

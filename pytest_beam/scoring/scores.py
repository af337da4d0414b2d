"""The JSON-able records a scored question produces."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .profile_names import ProfileName as ScorerMode  # the one list of profile names
from .profile_names import names_text

__all__ = ["ScorerMode", "ItemScore", "LineMatch", "EventOrderingDetail", "QuestionScore", "FLAGS", "passes"]


#: Every flag a QuestionScore may carry, with its meaning.
FLAGS: dict[str, str] = {
    "parse_error": "a judge reply did not parse as {'score': 1|0.5|0, ...}; that item scored 0",
    "score_out_of_range": "upstream mode: the judge's score was not 0, 0.5 or 1 (kept, truncated by int())",
    "judge_truncated": "a judge reply was cut off by its token cap (finish_reason 'length'); it was asked again "
    "once with a larger cap",
    "tau_undefined": "event_ordering: Kendall tau-b was undefined (NaN, e.g. an empty or one-line answer); "
                     "tau_norm set to 0",
}


def passes(score: float, pass_score: float) -> bool:
    """The one verdict of a score: a question passes at or above the pass score, in the run
    (``session.outcome``) and when its answer is judged again (``results.rejudge``) alike."""
    return score >= pass_score


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ItemScore(_Record):
    """One rubric item as the judge scored it: the scorer's output and a run record's item alike."""

    # A record written by a newer version may carry item fields this one does not know.
    model_config = ConfigDict(frozen=True, extra="ignore")

    rubric_item: str
    score: float = Field(description="The score the item counts for (after the mode's rules)")
    judge_score: float | str | None = Field(
        default=None, description="The 'score' value the judge gave, as given (None when absent or unparseable)"
    )
    reason: str | None = Field(default=None, description="The judge's 'reason' field, if any")
    reply: str | None = Field(default=None, description="The judge's raw reply text (None where not kept)")
    parsed: bool = Field(default=True, description="The reply parsed to a usable score "
                                                  "(False -> item scored 0, flag parse_error)")
    reply_format: str | None = Field(
        default=None, description="How the judge's reply was asked for: 'json_schema' (BEAM's verdict as a "
        "response_format) or 'text' (plain, parsed from text); None in records older than this field")
    repeats: list[float] = Field(
        default_factory=list,
        description="With --beam-judge-runs N > 1: each repeat's item score, in order (``score`` is their mean)")


class LineMatch(_Record):
    """One answer line and the rubric event it was aligned to (if any)."""

    model_config = ConfigDict(frozen=True, extra="ignore")  # a newer version's record may add fields

    line: str
    event: str | None = Field(description="The rubric event the judge matched the line to, or None")
    event_index: int | None = Field(description="Index of that event in the rubric, or None")
    replies: list[str] = Field(default_factory=list, description="The yes/no judge's replies for this line, in order")
    reply_formats: list[str] = Field(default_factory=list,
                                     description="How each reply was asked for: 'json_schema' or 'text'")


class EventOrderingDetail(_Record):
    """How an event_ordering answer was scored: the alignment of its lines to the rubric's events."""

    model_config = ConfigDict(frozen=True, extra="ignore")  # a newer version's record may add fields

    precision: float
    recall: float
    event_f1: float
    tau_b: float | None = Field(description="Raw Kendall tau-b; None when undefined (NaN)")
    event_tau_norm: float = Field(description="(tau_b + 1) / 2; 0 when tau_b is undefined")
    f1_times_tau_norm: float = Field(description="event_f1 * event_tau_norm (the default scorer's score)")
    answer_lines: list[str] = Field(description="The answer's lines as the judge saw them")
    alignment: list[LineMatch]
    reference_order: list[str] = Field(description="The rubric's events, in order")
    answer_order: list[str] = Field(
        description="The answer's lines after alignment (matched ones replaced by their event)")
    repeats: list[float] = Field(
        default_factory=list,
        description="With --beam-judge-runs N > 1: each repeat's question score, in order (the score is their mean); "
        "the fields above are the first repeat's")
    repeat_alignments: list[list[int | None]] = Field(
        default_factory=list,
        description="With --beam-judge-runs N > 1: each repeat's matched rubric event index per answer line")

    @field_validator("tau_b", mode="before")
    @classmethod
    def _nan_to_none(cls, v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return None
        return v


class QuestionScore(_Record):
    """The scorer's verdict on one answer to one probing question."""

    question_id: str
    ability: str
    mode: ScorerMode = Field(description=f"Which scoring profile produced this: {names_text()}")
    score: float = Field(
        description="default: mean of item scores, or event_f1*event_tau_norm for event_ordering; "
        "upstream: mean of int()-truncated item scores, or event_tau_norm for event_ordering"
    )
    items: list[ItemScore] = Field(default_factory=list, description="Per rubric item (empty for event_ordering)")
    flags: list[str] = Field(default_factory=list, description="Sorted, unique; each one of scoring.scores.FLAGS")
    judge_calls: int = Field(ge=0, description="Judge model calls made to score this question")
    event_f1: float | None = Field(default=None, description="event_ordering only")
    event_tau_norm: float | None = Field(default=None, description="event_ordering only")
    event_detail: EventOrderingDetail | None = Field(default=None, description="event_ordering only")

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, flags: list[str]) -> list[str]:
        """A scorer raises only the flags FLAGS defines, so a record can tell its judge's flags from its answer's."""
        unknown = sorted(set(flags) - set(FLAGS))
        if unknown:
            raise ValueError(f"flags {unknown} are not scorer flags ({', '.join(FLAGS)})")
        return flags

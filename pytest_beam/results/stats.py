"""The summary statistics of a record: per-ability and overall means with their intervals.

Kept apart from the record schema so the aggregation that computes them (`aggregate.py`) and the
schema that stores them (`schema.py`) both import this leaf, never each other at run time.
"""

from __future__ import annotations

from pydantic import Field

from .record_base import RecordModel


class MeanInterval(RecordModel):
    """A 95% (``level``) interval of a mean, by a seeded bootstrap over conversations."""

    low: float
    high: float
    level: float = 0.95
    clusters: int = Field(description="Conversations resampled")
    resamples: int
    seed: int


class AbilityStats(RecordModel):
    n: int = Field(0, description="Questions with a score (errors and skips are not counted here)")
    mean: float | None = None
    n_excluding_known_bad: int = 0
    mean_excluding_known_bad: float | None = None
    flags: dict[str, int] = Field(default_factory=dict)
    passed: int = Field(0, description="passed + xpassed")
    failed: int = Field(0, description="failed + xfailed")
    errors: int = 0
    skipped: int = 0
    interval: MeanInterval | None = Field(None, description="Cluster-bootstrap interval of ``mean``")


class OverallStats(RecordModel):
    n: int = 0
    mean: float | None = Field(None, description="Mean over every scored question")
    n_excluding_known_bad: int = 0
    mean_excluding_known_bad: float | None = None
    mean_of_abilities: float | None = Field(None, description="Unweighted mean of the ability means")
    errors: int = 0
    skipped: int = 0
    interval: MeanInterval | None = Field(None, description="Cluster-bootstrap interval of ``mean``")
    judge_agreement: float | None = Field(
        None, description="With judge repeats: share of all rubric items where every repeat agreed")
    context_tokens_mean: float | None = None
    context_tokens_p95: float | None = None


class SystemCell(RecordModel):
    """One system on one ability (or overall): the side-by-side table's cell."""

    n: int = Field(0, description="Questions with a score")
    mean: float | None = None
    interval: MeanInterval | None = None
    evidence_recall: float | None = Field(None, description="Mean over questions that have source ids")
    context_tokens: float | None = Field(None, description="Mean tokens of chat context sent per question")
    calls: int = Field(0, description="Live model calls of these questions (answer and judge)")
    cached_calls: int = Field(0, description="Calls of these questions answered from the response cache")
    replayed_calls: int = Field(0, description="Calls of these questions answered from a cassette")
    tokens: int = Field(0, description="Prompt + completion tokens of those calls, a cached or replayed call's "
                        "as recorded")
    errors: int = 0
    skipped: int = 0


class SystemStats(RecordModel):
    """One compared memory system: its cells by ability and overall, and what its ingest cost."""

    measurement_aid: bool = Field(False, description="A ceiling that reads the question's sources: never ranked")
    abilities: dict[str, SystemCell] = Field(default_factory=dict)
    overall: SystemCell = Field(default_factory=SystemCell)
    ingest_calls: int = Field(0, description="Live model calls of this system's ingests")
    ingest_cached_calls: int = Field(0, description="Its ingests' calls answered from the response cache")
    ingest_replayed_calls: int = Field(0, description="Its ingests' calls answered from a cassette")
    ingest_tokens: int = 0


class LeaderboardRow(RecordModel):
    """One system's place and cost in a run that compared several."""

    system: str
    rank: int | None = Field(None, description="1 = the highest overall mean; None for a measurement aid")
    measurement_aid: bool = False
    n: int = Field(0, description="Questions with a score")
    mean: float | None = None
    interval: MeanInterval | None = None
    evidence_recall: float | None = None
    points: float = Field(0.0, description="Sum of the system's question scores")
    calls: int = Field(0, description="The system's own live model calls (ingest, its library's, answering), "
                       "judge excluded")
    cached_calls: int = Field(0, description="Its own calls answered from the response cache")
    replayed_calls: int = Field(0, description="Its own calls answered from a cassette")
    tokens: int = Field(0, description="Prompt + completion tokens of its own calls, live, cached or replayed "
                        "(as recorded): a replayed run ranks on what the recording spent")
    judge_calls: int = Field(0, description="The judge's live calls on this system's answers")
    judge_tokens: int = 0
    tokens_per_point: float | None = Field(None, description="tokens / points (None when it scored nothing)")

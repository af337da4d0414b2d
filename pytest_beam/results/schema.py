"""The run record's schema: what one benchmark run leaves behind, as JSON-able pydantic models.

A question's result is :mod:`.question_record`'s; the summary statistics are :mod:`.stats`'s;
the aggregation that fills them is :mod:`.aggregate`'s (the schema holds numbers, it computes none).
Readers of a record file ignore fields they do not know, so a record written by a newer version
still loads (:data:`.record_base.RECORD_FILE_CONTEXT`).
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeAlias

from pydantic import Field

from ..llm.config import EMBEDDING_ROLE
from ..llm.config import ROLES as _CHAT_ROLES
from ..llm.meter import Usage
from ..scoring.judge_check import JudgeCheck
from ..scoring.profile_names import names_text
from .question_record import NotRunQuestion, QuestionRecord
from .record_base import RecordModel, WithRunOnlyFields
from .stats import AbilityStats, LeaderboardRow, OverallStats, SystemStats

__all__ = ["SCHEMA_VERSION", "RECORD_FILE", "TRACE_FILE", "NOTICE_FILE", "LATEST_FILE", "ROLES", "IngestEntry",
           "EndpointLimit", "ShardInfo", "ScoringStamp", "RunRecord"]

SCHEMA_VERSION = 2  # 2: intervals, scoring stamp, judge repeats, system name, label, context tokens
RECORD_FILE = "record.json"
TRACE_FILE = "trace.jsonl.gz"
NOTICE_FILE = "NOTICE"
LATEST_FILE = "latest"
#: The roles a model plays (usage is keyed by these, or by phase names).
ROLES: tuple[str, ...] = (*_CHAT_ROLES, EMBEDDING_ROLE)

#: A run's settings as a record holds them: ``settings.SettingsSnapshot`` when written, the
#: options of whichever version wrote the file when read back (options come and go), so open by nature.
RecordedRunSettings: TypeAlias = dict[str, Any]


class IngestEntry(WithRunOnlyFields):
    """One system's ingest of one conversation: a finished one has its graph's counts, a failed one says
    why in ``failed``; both keep their time and, in the run, the calls they made (the record counts
    those in ``usage_by_system`` and the systems' cells)."""

    RUN_ONLY: ClassVar[frozenset[str]] = frozenset({"usage", "span"})
    OMIT_NONE: ClassVar[bool] = True  # a failed one's counts are absent, not null, as records always had them

    chunks: int | None = None
    empty_extractions: int | None = None
    entities_by_type: dict[str, int] | None = None
    relations_by_type: dict[str, int] | None = None
    seconds: float = 0.0
    notes: list[str] | None = None
    failed: str | None = Field(None, description="Why the ingest did not finish (None: it did)")
    usage: dict[str, Usage] = Field(default_factory=dict, description="In the run only: the ingest's calls by role")
    span: tuple[float, float] | None = Field(
        None, description="In the run only: (start, end), seconds since the epoch, for the ingest's wall time")


class EndpointLimit(RecordModel):
    """Requests in flight to one model endpoint: where each process's adaptive limit settled, and
    how often the endpoint said it was overloaded (llm/adaptive_limit.py)."""

    endpoint: str = Field(description="Its base URL, credentials left out")
    ceiling: int = Field(description="--beam-concurrency: the most in flight per process")
    settled: dict[str, int] = Field(description="process -> the limit it ended the run at")
    lowest: int = Field(description="The lowest limit any process went down to")
    throttled: int = Field(0, description="Replies 429 or 503, every process")
    timeouts: int = Field(0, description="Requests that timed out, every process")


class ShardInfo(RecordModel):
    """The share of a run one machine ran (--beam-shard=K/N): whole conversations, balanced by chunks."""

    index: int = Field(description="K: this shard, from 1")
    count: int = Field(description="N: how many shards the run was split into")
    conversations: list[str] = Field(description="This shard's conversations")
    assignment: list[list[str]] = Field(description="Every shard's conversations, shard 1 first")
    run_questions: list[str] = Field(
        description="Every item of the whole run, all shards (after -k and -m), by item id: a merge names the "
        "ones no shard's record holds")


class ScoringStamp(RecordModel):
    """What scored the run, so two records can be told comparable or not."""

    profile: str = Field(description=f"The scoring profile (--beam-scorer): {names_text()}")
    prompt_sha256: dict[str, str] = Field(default_factory=dict, description="prompt name -> sha256 of its text")
    judge_runs: int = Field(1, description="Times each rubric item was judged (--beam-judge-runs)")


class RunRecord(RecordModel):
    schema_version: int = SCHEMA_VERSION
    run_id: str
    started: str | None = None
    finished: str | None = None
    package_version: str | None = None
    commit: str | None = None
    dirty: bool | None = None
    lockfile_hash: str | None = None
    mode: str | None = None
    tier: str | None = Field(None, description="BEAM's tier (100K, 500K, 1M, 10M); None: a record from before tiers")
    missing_conversations: list[str] = Field(
        default_factory=list, description="Conversations of the set whose chats the data lacked: left out, not scored")
    data_source: str | None = None
    data_revision: str | None = None
    scorer: str | None = None
    models: dict[str, str | None] = Field(default_factory=dict, description="role -> model name")
    scoring: ScoringStamp | None = Field(
        None, description="Profile, prompt hashes and judge repeats (None: older record)")
    system: str | None = Field(None, description="The memory system's ``name`` (the first selected one when several)")
    systems: dict[str, SystemStats] = Field(
        default_factory=dict, description="With several --beam-system names: each system's cells by ability, in "
        "the selected order; `abilities` and `overall` are then the first system's")
    label: str | None = Field(None, description="--beam-label: the user's name for this run")
    rejudged_from: str | None = Field(None, description="The run id whose answers this record scored again")
    merged_from: list[str] = Field(default_factory=list, description="The shards' run ids this record joins "
                                   "(pytest-beam merge); empty for a record of one run")
    judge_is_agent: bool = False
    settings: RecordedRunSettings = Field(default_factory=dict)
    pass_score: float | None = None
    questions: list[QuestionRecord] = Field(default_factory=list)
    not_run: list[NotRunQuestion] = Field(
        default_factory=list, description="The selected questions with no result, each with why: `questions` and "
        "`not_run` together name every question the run selected (the run is then `partial`)")
    selected_questions: int | None = Field(
        None, description="Questions (items) the run selected (None: a record from before it was kept)")
    abilities: dict[str, AbilityStats] = Field(default_factory=dict)
    overall: OverallStats = Field(default_factory=OverallStats)
    usage: dict[str, Usage] = Field(default_factory=dict, description="phase/role -> usage")
    usage_by_system: dict[str, dict[str, Usage]] = Field(
        default_factory=dict, description="With several systems, or any call through the model relay: system -> "
        "meter row -> usage, ingest and questions together (relayed calls are the rows '<system> <role>')")
    relay: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Requests the model relay received per system: chat, embeddings, errors")
    leaderboard: list[LeaderboardRow] = Field(
        default_factory=list, description="With several systems: ranked by mean score, cost beside score "
        "(results/leaderboard.py); a measurement aid last, unranked")
    phase_seconds: dict[str, float] = Field(
        default_factory=dict, description="ingest, agent, judge -> seconds summed over workers (and over questions "
        "answered at once): the time the phase took, not how long the run waited for it")
    phase_wall_seconds: dict[str, float] = Field(
        default_factory=dict, description="ingest, agent, judge -> wall time: the phase's first start to its last "
        "end over all workers (empty in a record from before it was kept)")
    shard: ShardInfo | None = Field(None, description="The run's share this record holds (None: the whole run)")
    endpoint_limits: list[EndpointLimit] = Field(
        default_factory=list, description="Each model endpoint called live: the requests in flight per process "
        "its adaptive limit settled at, and its 429s")
    graph: dict[str, IngestEntry] = Field(
        default_factory=dict, description="Each ingest (system/conversation, or the conversation alone): its graph "
        "and time, or why it failed (an older record's cache_hit, always false, is read and not shown)")
    snapshot_changes: list[str] = Field(default_factory=list)
    partial: bool = False
    partial_reason: str | None = None
    exit_status: int | None = None
    write_faults: list[str] = Field(
        default_factory=list, description="What the run could not write where it should (a full disk, a read-only "
        "folder): each process's lines and files refused, kept another way or lost, and the record's own moves")
    judge_check: JudgeCheck | None = Field(
        None,
        description="The judge's calibration on BEAM's reference answers (--beam-judge-check, pytest-beam judge-check)")
    judge_check_error: str | None = Field(None, description="Why the run's judge check did not finish")

    def primary_questions(self) -> list[QuestionRecord]:
        """The questions ``abilities`` and ``overall`` cover: all of them, or with several systems
        the first selected system's (each system's own cells are in ``systems``)."""
        return [q for q in self.questions if not self.systems or (q.system or self.system) == self.system]

    @property
    def profile(self) -> str | None:
        """The scoring profile: the stamp's, else (older records) the scorer setting."""
        return self.scoring.profile if self.scoring is not None else self.scorer

    def question(self, qid: str) -> QuestionRecord | None:
        for q in self.questions:
            if q.id == qid:
                return q
        return None

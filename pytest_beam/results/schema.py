"""The run record's schema: what one benchmark run leaves behind, as JSON-able pydantic models.

Readers of a record file ignore fields they do not know, so a record written by a newer version
still loads (:data:`RECORD_FILE_CONTEXT`). Within a run a question's result is one
:class:`QuestionRecord` from the test to the record, and there an unknown key is an error: the
test, the workers' parts and the controller run the same version, so a key nobody knows is a bug.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeAlias

from pydantic import (
    AliasChoices,
    ConfigDict,
    Field,
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from ..llm.config import EMBEDDING_ROLE
from ..llm.config import ROLES as _CHAT_ROLES
from ..scoring.judge_check import JudgeCheck
from ..scoring.scores import ItemScore
from .stats import AbilityStats, LeaderboardRow, MeanInterval, OverallStats, SystemCell, SystemStats
from .stats import RecordModel as _Model

__all__ = [
    "SCHEMA_VERSION", "RECORD_FILE", "TRACE_FILE", "NOTICE_FILE", "LATEST_FILE", "ROLES", "KNOWN_BAD_FLAG",
    "Outcome", "UsageRow", "all_calls", "ItemScore", "QuestionRecord", "MeanInterval", "AbilityStats", "OverallStats",
    "ScoringStamp", "RunRecord", "SystemCell", "SystemStats", "RECORD_FILE_CONTEXT",
]

SCHEMA_VERSION = 2  # 2: intervals, scoring stamp, judge repeats, system name, label, context tokens
RECORD_FILE = "record.json"
TRACE_FILE = "trace.jsonl.gz"
NOTICE_FILE = "NOTICE"
LATEST_FILE = "latest"
#: The roles a model plays (usage is keyed by these, or by phase names).
ROLES: tuple[str, ...] = (*_CHAT_ROLES, EMBEDDING_ROLE)
KNOWN_BAD_FLAG = "known_bad_rubric"

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]

#: A step of a question's trace as a record holds it: a ``system.TraceStep`` when this version
#: wrote it, whatever another version or a system of its own wrote when a file is read back, so
#: open; readers check the keys they use (``store.normalize_step``).
RecordedStep: TypeAlias = dict[str, Any]
#: A run's settings as a record holds them: ``settings.SettingsSnapshot`` when written, the
#: options of whichever version wrote the file when read back (options come and go), so open.
RecordedRunSettings: TypeAlias = dict[str, Any]

#: Validation context for a record read from a file: a question's keys this version does not
#: know (a newer version wrote them) are dropped, not refused.
RECORD_FILE_CONTEXT: dict[str, Any] = {"record_file": True}
# Serialization context of a result on its way to the controller: with its run-only fields.
_IN_RUN = {"in_run": True}



class UsageRow(_Model):
    """Model calls and their cost for one role or phase."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = Field(0.0, description="Wall (latency) seconds spent in these calls",
                           validation_alias=AliasChoices("seconds", "latency_s"))
    replayed_calls: int = Field(0, description="Calls answered from a cassette")
    cached_tokens: int = Field(0, description="Tokens of cached and replayed calls (recorded usage, not spent)")
    retries: int = 0
    errors: int = Field(0, description="Calls that failed for good (counted in calls when a request went out)")
    abandoned: int = Field(0, description="Calls sent whose reply never came: the run stopped while they were "
                           "in flight; the endpoint saw them, their tokens are unknown")

    def __add__(self, other: UsageRow) -> UsageRow:
        return UsageRow(**{name: getattr(self, name) + getattr(other, name) for name in UsageRow.model_fields})

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def all_calls(usage: Mapping[str, UsageRow | Mapping[str, Any]]) -> int:
    """Model calls in a usage table, whether live, cached or replayed: the one count of a question's
    calls that the record, the terminal, the page and JUnit all show (a replay makes no live call)."""
    total = 0
    for row in usage.values():
        get = row.get if isinstance(row, Mapping) else (lambda k, d=0, r=row: getattr(r, k, d))
        total += int(get("calls", 0) or 0) + int(get("cached_calls", 0) or 0) + int(get("replayed_calls", 0) or 0)
    return total


class QuestionRecord(_Model):
    """One probing question of one run: its answer, scores, flags, usage and (optionally) trace.

    Built once from the question's outcome (``session.outcome``), carried to the controller as
    JSON (the ``beam_result`` user property, a worker's part) and put into the run's record. The
    fields set so far are what the run knows of it: a result received replaces those it sets, a
    worker's part fills only those the controller lacks (``session.collector``)."""

    model_config = ConfigDict(extra="forbid")

    #: Fields the run needs on its way to the record (the controller's phase times, the terminal's
    #: answer diff) that the record file does not hold.
    RUN_ONLY: ClassVar[frozenset[str]] = frozenset({"phase_seconds", "answer_diff"})

    id: str = Field(description='e.g. "conv17:information_extraction:0"')
    conversation_id: str = ""
    ability: str = ""
    index: int = 0
    question: str = ""
    answer: str | None = None
    score: float | None = Field(default=None, description="None when the question errored or was skipped")
    score_excluding_known_bad: float | None = Field(default=None, description="None for a known-bad-flagged question")
    event_f1: float | None = None
    event_tau_norm: float | None = None
    evidence_recall: float | None = Field(default=None, description="None for abstention questions (no source ids)")
    flags: list[str] = Field(default_factory=list)
    known_bad_reason: str | None = None
    items: list[ItemScore] = Field(default_factory=list)
    event_detail: dict[str, Any] | None = Field(
        default=None,
        description="event_ordering: answer_lines, alignment [{line, event, event_index}] (or matched: "
        "[event|None]), reference_order, answer_order, precision, recall, event_f1, tau_b, event_tau_norm",
    )
    outcome: Outcome = "passed"
    error: str | None = Field(default=None, description="The skip reason or the error summary")
    usage: dict[str, UsageRow] = Field(default_factory=dict, description="role -> usage")
    agent_steps: int = 0
    seconds: float = 0.0
    scorer: str | None = None
    source_message_ids: list[int] = Field(default_factory=list)
    retrieved_message_ids: list[int] = Field(default_factory=list)
    answer_changed: bool | None = Field(
        default=None, description="The answer differs from its snapshot (None: not compared)")
    context_tokens: int | None = Field(
        default=None,
        description="Tokens the system put in front of the answering model for this question (None: not measured)")
    system: str | None = Field(default=None, description="The memory system that answered (--beam-system name)")
    trace: list[RecordedStep] = Field(
        default_factory=list,
        description="Agent steps: {kind: model|tool, tool, arguments, result_chars, message_ids, text?}; "
        "may be empty here, always present in the trace file",
    )
    phase_seconds: dict[str, float] = Field(
        default_factory=dict, description="In the run only: agent, judge -> seconds (the record sums them)")
    answer_diff: str | None = Field(default=None, description="In the run only: the answer's diff from its snapshot")

    @model_validator(mode="before")
    @classmethod
    def _known_keys_of_a_file(cls, data: Any, info: ValidationInfo) -> Any:
        """A record file's question keeps the keys this version knows (see RECORD_FILE_CONTEXT)."""
        if isinstance(data, Mapping) and (info.context or {}).get("record_file"):
            return {k: v for k, v in data.items() if k in cls.model_fields}
        return data

    @model_serializer(mode="wrap")
    def _without_run_only(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """The record (file, page, report) leaves the run-only fields out; a result in the run keeps them."""
        data: dict[str, Any] = handler(self)
        if not (info.context or {}).get("in_run"):
            for name in self.RUN_ONLY:
                data.pop(name, None)
        return data

    def in_run_dict(self) -> dict[str, JsonValue]:
        """This result as the run carries it: the fields set so far (so whoever reads it back knows
        which ones were), run-only fields included, the trace left out (it has its own file)."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"trace"}, context=_IN_RUN)

    def in_run_json(self) -> str:
        """:meth:`in_run_dict` as JSON: the ``beam_result`` user property."""
        return self.model_dump_json(exclude_unset=True, exclude={"trace"}, context=_IN_RUN)

    @property
    def judge_agreement(self) -> float | None:
        """With judge repeats: share of this question's repeated decisions (items, event lines) that all agreed."""
        from ..scoring.repeats import agreement_units

        agreed, repeated = agreement_units(self.items, self.event_detail)
        return agreed / repeated if repeated else None

    @property
    def known_bad(self) -> bool:
        return KNOWN_BAD_FLAG in self.flags or bool(self.known_bad_reason)

    @property
    def scored(self) -> bool:
        """Whether the question counts in the means: it has a score and neither errored nor was skipped."""
        return self.score is not None and self.outcome not in ("error", "skipped")

    @property
    def calls(self) -> int:
        """Model calls this question made, whether live, cached or replayed from a cassette."""
        return all_calls(self.usage)

    @property
    def agent_calls(self) -> int:
        agent = self.usage.get("agent")
        if agent is None:
            return self.agent_steps
        return agent.calls + agent.cached_calls + agent.replayed_calls


class ScoringStamp(_Model):
    """What scored the run, so two records can be told comparable or not."""

    profile: str = Field(description="The scoring profile (--beam-scorer): default, upstream or omnimemeval")
    prompt_sha256: dict[str, str] = Field(default_factory=dict, description="prompt name -> sha256 of its text")
    judge_runs: int = Field(1, description="Times each rubric item was judged (--beam-judge-runs)")


class RunRecord(_Model):
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
    judge_is_agent: bool = False
    settings: RecordedRunSettings = Field(default_factory=dict)
    pass_score: float | None = None
    questions: list[QuestionRecord] = Field(default_factory=list)
    abilities: dict[str, AbilityStats] = Field(default_factory=dict)
    overall: OverallStats = Field(default_factory=OverallStats)
    usage: dict[str, UsageRow] = Field(default_factory=dict, description="phase/role -> usage")
    usage_by_system: dict[str, dict[str, UsageRow]] = Field(
        default_factory=dict, description="With several systems, or any call through the model relay: system -> "
        "meter row -> usage, ingest and questions together (relayed calls are the rows '<system> <role>')")
    relay: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Requests the model relay received per system: chat, embeddings, errors")
    leaderboard: list[LeaderboardRow] = Field(
        default_factory=list, description="With several systems: ranked by mean score, cost beside score "
        "(results/leaderboard.py); a measurement aid last, unranked")
    phase_seconds: dict[str, float] = Field(default_factory=dict, description="ingest, agent, judge -> seconds")
    graph: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="conversation -> {entities_by_type, relations_by_type, chunks, empty_extractions, "
                    "seconds} (an older record's cache_hit, always false, is read and not shown)",
    )
    snapshot_changes: list[str] = Field(default_factory=list)
    partial: bool = False
    partial_reason: str | None = None
    exit_status: int | None = None
    judge_check: JudgeCheck | None = Field(
        None,
        description="The judge's calibration on BEAM's reference answers (--beam-judge-check, pytest-beam judge-check)")
    judge_check_error: str | None = Field(None, description="Why the run's judge check did not finish")

    @model_validator(mode="after")
    def _fill_aggregates(self) -> RunRecord:
        # A record built with questions but no aggregates gets them; given ones are kept as given.
        if self.questions and not self.abilities:
            from .aggregate import aggregate

            self.abilities, self.overall = aggregate(self.primary_questions())
        return self

    def primary_questions(self) -> list[QuestionRecord]:
        """The questions ``abilities`` and ``overall`` cover: all of them, or with several systems
        the first selected system's (each system's own cells are in ``systems``)."""
        return [q for q in self.questions if not self.systems or (q.system or self.system) == self.system]

    def recompute(self) -> RunRecord:
        """A copy with abilities and overall recomputed from the questions."""
        from .aggregate import aggregate

        abilities, overall = aggregate(self.primary_questions())
        update: dict[str, Any] = {"abilities": abilities, "overall": overall}
        if self.systems:
            from .systems import system_stats

            fresh = system_stats(self.questions, list(self.systems),
                                 [n for n, s in self.systems.items() if s.measurement_aid])
            for name, stats in fresh.items():
                old = self.systems.get(name)
                if old is not None:
                    stats.ingest_calls, stats.ingest_tokens = old.ingest_calls, old.ingest_tokens
            update["systems"] = fresh
            from .leaderboard import leaderboard

            update["leaderboard"] = leaderboard(fresh, self.usage_by_system, self.questions)
        return self.model_copy(update=update)

    @property
    def profile(self) -> str | None:
        """The scoring profile: the stamp's, else (older records) the scorer setting."""
        return self.scoring.profile if self.scoring is not None else self.scorer

    def question(self, qid: str) -> QuestionRecord | None:
        for q in self.questions:
            if q.id == qid:
                return q
        return None

"""The contract between the harness and a memory system under test.

The harness gives a system one conversation's documents to ingest, then asks it questions one at
a time; the system answers with text, the trace of how it got there, and the message ids its
retrieval surfaced (for evidence recall). Usage is metered by the model client the harness hands
over, so a system that calls models through it is costed like the built-in one. Before any of
that, a dry run asks a registered system's class for its `estimate` of the calls it would make
(`Estimate`); a system that cannot know them keeps the default, None, and is listed without one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NotRequired, Protocol, TypeAlias, TypedDict

from .data.records import Document, SystemQuestion
from .system_registry import DEFAULT_SYSTEM

if TYPE_CHECKING:
    from .data.records import ProbingQuestion
    from .data.sets import BenchmarkSet
    from .llm import ModelClient
    from .llm.meter import UsageJson
    from .llm.relay import ModelRelay
    from .llm.wire import JsonObject
    from .services import Neo4jConnection
    from .settings import Settings


@dataclass
class IngestReport:
    """What ingest did, for the record and the summary."""

    chunks: int = 0
    empty_extractions: int = 0
    entities_by_type: dict[str, int] = field(default_factory=dict)
    relations_by_type: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


class TracedToolCall(TypedDict):
    """A tool call a model step asked for: its id (None for a JSON action), the tool and its arguments."""

    id: str | None
    name: str
    arguments: JsonObject


class ModelStep(TypedDict):
    """A trace entry: one call of the answering model (the built-in agent's and the baselines')."""

    type: Literal["model"]
    step: int  # 1-based count of model calls so far
    mode: str  # "native" (tool calls), "json" (JSON actions) or "plain"
    text: str | None  # the reply's text (the agent cuts it to its trace limit)
    tool_calls: list[TracedToolCall]
    finish_reason: str | None
    final: bool  # the call that gave the answer
    usage: NotRequired[UsageJson]  # the call's Usage, when the client reports one


class ToolStep(TypedDict):
    """A trace entry: one tool the agent called, and what came back."""

    type: Literal["tool"]
    step: int  # the model call that asked for it
    call_id: str | None
    tool: str
    arguments: Any  # as the model sent them (a dict, or what failed to parse)
    result_chars: int
    message_ids: list[int]  # the messages the result showed
    error: bool


# What a trace note's fields may hold: what JSON can write. Read-only container types, so a
# system's own list[int] or dict[str, float] goes in as it is.
NoteValue: TypeAlias = "str | int | float | bool | Sequence[NoteValue] | Mapping[str, NoteValue] | None"

# Anything else a system notes in its trace: {"type": "note", "event": ..., and the note's own
# fields}, open by design (what a system notes is its own: the messages it put in the prompt,
# its scores, what it recalled), so a dict of JSON values rather than a shape.
TraceNote: TypeAlias = dict[str, NoteValue]

# A step of an answer's trace: a model call, a tool call, or a note. Written to the record and
# the trace file as the plain JSON objects these are.
TraceStep: TypeAlias = ModelStep | ToolStep | TraceNote


# An answer flagged with one of these is no answer: the harness scores it 0 with no judge call (in the
# run and in `pytest-beam rejudge` alike) and fails its test. A system sets them; the harness reads
# them only through `SystemAnswer.gave_no_answer`.
FLAG_AGENT_FAILURE: Final = "agent_failure"  # the system ended without an answer (an empty reply, a step limit)
FLAG_TIMEOUT: Final = "timeout"  # the system ran out of its time for the question
NO_ANSWER_FLAGS: Final = frozenset({FLAG_AGENT_FAILURE, FLAG_TIMEOUT})


@dataclass
class SystemAnswer:
    text: str
    retrieved_message_ids: set[int] = field(default_factory=set)
    trace: list[TraceStep] = field(default_factory=list)
    steps: int = 0
    flags: list[str] = field(default_factory=list)  # e.g. FLAG_AGENT_FAILURE, FLAG_TIMEOUT
    # Tokens of chat context put in front of the answering model for this answer, when the
    # system knows it (the baselines in pytest_beam.systems do): compares systems' reading cost.
    context_tokens: int | None = None

    @property
    def gave_no_answer(self) -> bool:
        """The system flagged this answer as none (NO_ANSWER_FLAGS): it scores 0, unjudged."""
        return bool(NO_ANSWER_FLAGS & set(self.flags))


# The length of an answer, in tokens, that a dry run assumes: what a baseline writes, and what the judge reads.
ANSWER_TOKENS: Final = 250


@dataclass
class PhaseEstimate:
    """One phase of a dry-run estimate: its model calls and their tokens."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, calls: int, prompt: int, completion: int) -> None:
        self.calls += calls
        self.prompt_tokens += prompt
        self.completion_tokens += completion


@dataclass
class Estimate:
    """What a dry run expects a system to send on the selected questions, phase by phase.

    A system's `MemorySystem.estimate` fills its own phases (its ingest and its answers); the
    harness adds the judge's calls, which are the same whoever answered, and prints the table.
    """

    phases: dict[str, PhaseEstimate] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)  # conversation -> chunks ingested (0: no ingest call)
    questions: int = 0
    summary: str = ""  # the line above the system's table: what it counted, what it assumed
    assumptions: Mapping[str, object] = field(default_factory=dict)  # name -> value, printed with the estimate

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.phases.values())

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.phases.values())


class MemorySystem(ABC):
    """One instance per conversation; the harness calls ingest once, then answer per question."""

    name: str = "memory-system"
    # True only for a system that reads what a real one never may (the question's own sources):
    # the harness lends it `SystemContext.gold_evidence`, and it is reported apart, never ranked.
    measurement_aid: ClassVar[bool] = False
    # True for a system whose `answer` may run for several questions of one conversation at once,
    # in threads (it keeps no per-question state on the instance, and what it shares is safe between
    # threads): the harness then answers up to --beam-question-concurrency questions at a time once
    # the conversation is ingested. False, the default, answers one question after another.
    answers_concurrently: ClassVar[bool] = False

    @abstractmethod
    def ingest(self, documents: list[Document]) -> IngestReport: ...

    @abstractmethod
    def answer(self, question: SystemQuestion) -> SystemAnswer: ...

    def close(self) -> None:  # noqa: B027 -- optional: most systems hold nothing to release
        """Release what the system holds (drivers, files); the harness stops services itself."""

    @classmethod
    def estimate(cls, bench_set: BenchmarkSet, questions: list[ProbingQuestion],
                 settings: Settings) -> Estimate | None:
        """The dry run's estimate of this system's own model calls on `questions` (its ingest of
        their conversations and its answers; the harness adds the judge's), counted with no model
        and no service. None, the default, when the system cannot know them before it runs (an
        outside library decides them): the dry run lists it without an estimate."""
        return None


class StartNeo4j(Protocol):
    """`SystemContext.start_neo4j`: the conversation's Neo4j, with the plugin procedures (APOC's)
    its system's library calls; a provider that cannot give them stops the run saying which."""

    def __call__(self, procedures: Sequence[str] = ()) -> Neo4jConnection: ...


@dataclass
class SystemContext:
    """What the harness lends a system for one conversation.

    `models` is the metered, cached, capped model client; `start_neo4j()` starts (once) the
    conversation's Neo4j service and returns its connection — the harness stops it at the end.
    A system that needs no graph never calls it, and no service starts.
    """

    conversation_id: str
    models: ModelClient
    settings: Settings
    work_dir: Path  # private to this conversation
    start_neo4j: StartNeo4j
    progress: Callable[[str], None] | None = None  # one line of progress for the user
    # Question id -> its source message ids. Filled by the harness ONLY for a system whose class
    # sets `measurement_aid = True` (the gold-evidence ceiling); None for every other system.
    gold_evidence: Callable[[str], tuple[int, ...]] | None = None
    # The system the run asks for (`--beam-system`): a conftest's `pytest_beam_make_system`
    # returns its own system for its own names (see `pytest_beam_system_names`).
    system_name: str = DEFAULT_SYSTEM
    # The harness's OpenAI-compatible relay (started on first call, one per process) for a system
    # whose library calls models with its own HTTP client: `relay().base_url(system_name, role)` is
    # its endpoint, so those calls are metered as "<system> <role>", capped, cached, recorded and
    # replayed like the harness's own (pytest_beam/llm/relay.py).
    relay: Callable[[], ModelRelay] | None = None

"""One question's run of the agent: its settings, its state (messages, trace, ids seen, clock), the
harness's first search and the last call without tools; both loops (:mod:`.agent_native`,
:mod:`.agent_json`) share them. See :mod:`pytest_beam.memory.agent` for the whole design."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from ..data.records import SystemQuestion
from ..system import FLAG_TIMEOUT, ModelStep, NoteValue, SystemAnswer, TracedToolCall, TraceStep
from . import prompts_agent as prompts
from .search_hits import Embedder
from .tool_specs import ToolLimits
from .tools import ToolBox, ToolResult

if TYPE_CHECKING:
    from neo4j import Driver

    from ..llm.meter import Usage
    from ..llm.wire import JsonObject, WireMessage
    from .model_protocols import AgentModels


ToolMode = Literal["native", "json", "auto"]
AGENT_ROLE: Final = "agent"
FLAG_LIMIT_REACHED = "limit_reached"  # an answer the last call rescued: scored, but not the agent's own finish


@dataclass(frozen=True)
class AgentConfig:
    tool_mode: ToolMode = "auto"
    max_steps: int = 12
    timeout_s: float = 300.0
    max_tokens: int = 1024
    final_max_tokens: int = 1024
    limits: ToolLimits = ToolLimits()
    trace_text_chars: int = 2000  # model text kept in the trace per step
    # The harness's own first search: its hits (0: the model starts alone) and what it searches.
    # 6 messages, not 8 messages and statements: on the full set the agent is then shown more of
    # the evidence (a statement hit repeats a message the list often holds already) in a shorter
    # prompt at every step (bench/overhead.py, README "Harness overhead"); the model can still
    # search statements (hybrid_search kind=any) and call entity_statements.
    first_search_hits: int = 6
    first_search_kind: Literal["any", "messages", "statements"] = "messages"

    def __post_init__(self) -> None:
        if self.tool_mode not in ("native", "json", "auto"):
            raise ValueError(f"tool_mode must be 'native', 'json' or 'auto', not {self.tool_mode!r}")
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if self.first_search_hits < 0:
            raise ValueError("first_search_hits must be 0 or more")
        if self.first_search_kind not in ("any", "messages", "statements"):
            raise ValueError("first_search_kind must be 'any', 'messages' or 'statements', "
                             f"not {self.first_search_kind!r}")


class AgentRun:
    """The state of one question: messages, trace, ids seen, clock."""

    def __init__(self, driver: Driver, database: str, question: SystemQuestion, models: AgentModels,
                 embedder: Embedder | None, config: AgentConfig) -> None:
        self.question = question
        self.models = models
        self.config = config
        self.started = time.monotonic()
        self.toolbox = ToolBox(driver, database, embedder, config.limits, deadline=self.seconds_left)
        self.trace: list[TraceStep] = []
        self.retrieved: set[int] = set()
        self.model_calls = 0
        self.tool_calls = 0
        # the prompt of the agent's latest call: what was in front of the model when it answered,
        # the figure published tables put beside a score (the baselines report their one prompt)
        self.last_prompt_tokens: int | None = None

    # -- clock ---------------------------------------------------------------------------------

    def seconds_left(self) -> float:
        return self.config.timeout_s - (time.monotonic() - self.started)

    def timed_out(self) -> bool:
        return self.seconds_left() <= 0

    # -- trace ---------------------------------------------------------------------------------

    def _cut(self, text: str | None) -> str | None:
        if text is None:
            return None
        limit = self.config.trace_text_chars
        return text if len(text) <= limit else text[:limit] + f"…[cut: {len(text) - limit} more characters]"

    def note(self, event: str, **fields: NoteValue) -> None:
        self.trace.append({"type": "note", "event": event, **fields})

    def model_step(self, mode: str, *, text: str | None, tool_calls: list[TracedToolCall],
                   finish_reason: str | None = None, usage: Usage | None = None, final: bool = False) -> None:
        self.model_calls += 1
        # a cached or replayed call reports no prompt it was sent (its usage is recorded, not
        # spent): the context is then not measured (None), never a silent 0
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        live = bool(getattr(usage, "calls", 0))
        self.last_prompt_tokens = prompt_tokens if live and isinstance(prompt_tokens, int) else None
        entry: ModelStep = {"type": "model", "step": self.model_calls, "mode": mode,
                            "text": self._cut(text), "tool_calls": tool_calls,
                            "finish_reason": finish_reason, "final": final}
        if usage is not None:
            entry["usage"] = usage.model_dump()
        self.trace.append(entry)

    def run_tool(self, name: str, arguments: Any, call_id: str | None = None,
                 arguments_error: str | None = None) -> ToolResult:
        self.tool_calls += 1
        if arguments_error:
            result = ToolResult(f"Error: {arguments_error}. Call the tool again with a JSON object.",
                                is_error=True)
        else:
            result = self.toolbox.call(name, arguments)
        self.retrieved.update(result.message_ids)
        self.trace.append({"type": "tool", "step": self.model_calls, "call_id": call_id, "tool": name,
                           "arguments": arguments, "result_chars": result.chars,
                           "message_ids": list(result.message_ids), "error": result.is_error})
        return result

    def answer(self, text: str, flags: list[str] | None = None) -> SystemAnswer:
        return SystemAnswer(text=text, retrieved_message_ids=set(self.retrieved), trace=self.trace,
                            steps=self.model_calls, flags=list(flags or []), context_tokens=self.last_prompt_tokens)


FIRST_SEARCH_CALL_ID = "first_search"


@dataclass(frozen=True)
class FirstSearch:
    arguments: JsonObject
    result: ToolResult


def first_search(run: AgentRun) -> FirstSearch | None:
    """The harness's own first step: ``hybrid_search`` with the question's words (module docstring)."""
    hits = run.config.first_search_hits
    if hits == 0:
        return None
    arguments: JsonObject = {"query": run.question.question, "limit": min(hits, run.config.limits.max_search_hits),
                 "kind": run.config.first_search_kind}
    run.note("first_search", hits=arguments["limit"])
    return FirstSearch(arguments, run.run_tool("hybrid_search", arguments, FIRST_SEARCH_CALL_ID))


def canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def finish(run: AgentRun, messages: list[WireMessage], flag: str, mode: str) -> SystemAnswer:
    """The step limit or the time is up: one call without tools for the best answer so far."""
    run.note("limit_reached", reason="timeout" if flag == FLAG_TIMEOUT else "steps_or_no_answer",
             model_calls=run.model_calls)
    final_messages: list[WireMessage] = [*messages, {"role": "user", "content": prompts.FINAL_NUDGE}]
    # Infrastructure errors (endpoint, budget, cassette) propagate from here as everywhere.
    result = run.models.chat(role=AGENT_ROLE, messages=final_messages,
                             max_tokens=run.config.final_max_tokens)
    text = (result.text or "").strip()
    run.model_step(mode, text=result.text, tool_calls=[], finish_reason=result.finish_reason,
                   usage=result.usage, final=True)
    if text and mode == "json":
        text = unwrap_json_answer(text)
    if text:
        return run.answer(text, [FLAG_LIMIT_REACHED])
    return run.answer("", [flag])


def unwrap_json_answer(text: str) -> str:
    """A JSON-mode model may answer the last call with an action object anyway."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            return text
        if isinstance(data, dict):
            answer = data.get("final_answer")
            return answer.strip() if isinstance(answer, str) else ""
    return text

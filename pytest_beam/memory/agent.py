"""The agent: answers one question from one conversation's graph with read-only tools.

Two ways to talk to the model, chosen by ``AgentConfig.tool_mode``:

* ``"native"``: the endpoint's own tool calling (``tools`` in the request). A reply without a
  tool call is the final answer.
* ``"json"``: every step is a ``models.structured(...)`` call whose reply is an
  :class:`AgentAction` — a tool and its arguments, or none when the model has what it needs; the
  answer is then one plain-text call to a reader of the tools' results (``prompts.READER_TEMPLATE``). Works with any model that can
  return JSON (grammar-constrained endpoints always can).
* ``"auto"`` (default): start native, and fall back to JSON actions for this question when
  (a) the endpoint refuses the request with tools (HTTP 400/422 whose text mentions tools), or
  (b) the model's *first* native reply has no tool call. Rule (b) is sound because no memory
  question can be answered before looking at the memory: a first reply without a tool call
  means the endpoint dropped the tools silently (llama.cpp does this with a chat template
  lacking tool blocks) or the model does not call tools by itself. A model that does call tools
  is unaffected; one that answers straight away costs one extra call. The refusal in (a) is
  remembered for the client, so later questions go straight to JSON actions.
  With record/replay, use an explicit mode if the endpoint refuses tools: a refused request is
  not a recorded reply.

The first search is the harness's, not the model's: before the first model call the agent runs
``hybrid_search`` with the question's own words (``AgentConfig.first_search_hits`` hits; 0 turns it
off) and puts the call and its result in the conversation as if the model had made it. What the
model sees first is therefore never decided by its skill at choosing a tool or writing Cypher
(measured on Qwen2.5-Coder-1.5B: given the choice, it queried labels the schema does not have and
answered "I don't have enough information" with the answer in the graph). With that search in
front of it, a model may answer at once; so in ``"auto"`` mode rule (b) below applies only when
the first search is off.

Limits: ``max_steps`` model calls per question, the last call included, and ``timeout_s``. The
agent makes at most ``max_steps - 1`` calls with tools; reaching that (or the time, or an empty
reply, or an invalid action) makes one last call without tools that asks for the best answer from
what was gathered; if it gives text, that is the answer, scored as any other, with the flag
``limit_reached`` (the answer came from the last call, not from the agent's own finish); if not,
the answer is empty with the flag ``agent_failure`` (steps) or ``timeout``. The harness scores
those 0 as failures.

Model infrastructure errors (:class:`ModelEndpointError`, :class:`BudgetExceeded`,
:class:`CassetteMiss`) propagate, as do Neo4j outages: they are errors, not answers.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..data.records import SystemQuestion
from ..llm.errors import ModelEndpointError, StructuredOutputError
from ..system import SystemAnswer
from . import prompts_agent as prompts
from .search import Embedder
from .tools import ToolBox, ToolLimits, ToolResult

if TYPE_CHECKING:
    from neo4j import Driver

    from .model_protocols import AgentModels

ToolMode = Literal["native", "json", "auto"]
ToolName = Literal["hybrid_search", "entity_statements", "timeline", "standing_rules", "topic_sessions",
                   "session_outline", "read_messages", "cypher"]
AGENT_ROLE = "agent"
FLAG_AGENT_FAILURE = "agent_failure"
FLAG_TIMEOUT = "timeout"
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
            raise ValueError(f"first_search_kind must be 'any', 'messages' or 'statements', not {self.first_search_kind!r}")


class AgentAction(BaseModel):
    """One step of the JSON-action mode: a tool call, or null when the model has what it needs;
    the answer itself is then asked of a reader, in plain text (``prompts.READER_TEMPLATE``)."""

    model_config = ConfigDict(extra="forbid")

    tool: ToolName | None = Field(default=None,
                                  description="The tool to call, or null when you have what you need to answer.")
    arguments: dict[str, Any] | None = Field(default=None, description="The tool's arguments.")


class FirstAgentAction(BaseModel):
    """The first JSON action must call a tool when the harness has not searched: small models given
    the choice answered from nothing (measured on Qwen2.5-Coder-1.5B: it skipped the tools unless
    the schema required one)."""

    model_config = ConfigDict(extra="forbid")

    tool: ToolName = Field(description="The tool to call first: look in the memory before answering.")
    arguments: dict[str, Any] = Field(description="The tool's arguments.")

    def as_action(self) -> AgentAction:
        return AgentAction(tool=self.tool, arguments=self.arguments)


def action_schema(step: int, searched: bool = False) -> type[BaseModel]:
    """The JSON schema of step ``step`` (0 = first): a tool call first unless the harness has
    already searched (``searched``), then a tool or the answer."""
    return FirstAgentAction if step == 0 and not searched else AgentAction


def _refuses_tools(exc: ModelEndpointError) -> bool:
    if exc.status not in (400, 422):
        return False
    text = f"{exc.reason or ''} {exc}".lower()
    return "tool" in text or "function" in text


class _SwitchToJson(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Run:
    """The state of one question: messages, trace, ids seen, clock."""

    def __init__(self, driver: Driver, database: str, question: SystemQuestion, models: AgentModels,
                 embedder: Embedder | None, config: AgentConfig) -> None:
        self.question = question
        self.models = models
        self.config = config
        self.started = time.monotonic()
        self.toolbox = ToolBox(driver, database, embedder, config.limits, deadline=self.seconds_left)
        self.trace: list[dict[str, Any]] = []
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

    def note(self, event: str, **fields: Any) -> None:
        self.trace.append({"type": "note", "event": event, **fields})

    def model_step(self, mode: str, *, text: str | None, tool_calls: list[dict[str, Any]],
                   finish_reason: str | None = None, usage: Any = None, final: bool = False) -> None:
        self.model_calls += 1
        # a cached or replayed call reports no prompt it was sent (its usage is recorded, not
        # spent): the context is then not measured (None), never a silent 0
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        live = bool(getattr(usage, "calls", 0))
        self.last_prompt_tokens = prompt_tokens if live and isinstance(prompt_tokens, int) else None
        entry: dict[str, Any] = {"type": "model", "step": self.model_calls, "mode": mode,
                                 "text": self._cut(text), "tool_calls": tool_calls,
                                 "finish_reason": finish_reason, "final": final}
        if usage is not None and hasattr(usage, "to_dict"):
            entry["usage"] = usage.to_dict()
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


def answer_question(driver: Driver, database: str, question: SystemQuestion, models: AgentModels,
                    embedder: Embedder | None, config: AgentConfig | None = None) -> SystemAnswer:
    """Answer ``question`` from the graph in ``database``; see the module docstring."""
    config = config or AgentConfig()
    run = _Run(driver, database, question, models, embedder, config)
    first = _first_search(run)
    mode = config.tool_mode
    if mode == "auto" and _is_refused(models):
        run.note("json_mode", reason="endpoint refused native tools earlier")
        mode = "json"
    if mode in ("native", "auto"):
        try:
            return _native_loop(run, strict=(mode == "native"), first=first)
        except _SwitchToJson as switch:
            run.note("json_mode", reason=switch.reason)
    return _json_loop(run, first)


FIRST_SEARCH_CALL_ID = "first_search"


@dataclass(frozen=True)
class _FirstSearch:
    arguments: dict[str, Any]
    result: ToolResult


def _first_search(run: _Run) -> _FirstSearch | None:
    """The harness's own first step: ``hybrid_search`` with the question's words (module docstring)."""
    hits = run.config.first_search_hits
    if hits == 0:
        return None
    arguments = {"query": run.question.question, "limit": min(hits, run.config.limits.max_search_hits),
                 "kind": run.config.first_search_kind}
    run.note("first_search", hits=arguments["limit"])
    return _FirstSearch(arguments, run.run_tool("hybrid_search", arguments, FIRST_SEARCH_CALL_ID))


# The refusal (rule (a) above) is remembered on the model client the runtime owns, as the client
# remembers its own endpoint quirks (seed, structured-output mode): no module-level state.
REFUSED_NATIVE_ATTR = "agent_refused_native_tools"


def _is_refused(models: AgentModels) -> bool:
    return bool(getattr(models, REFUSED_NATIVE_ATTR, False))


def _remember_refusal(models: AgentModels) -> None:
    try:
        setattr(models, REFUSED_NATIVE_ATTR, True)
    except AttributeError:  # a client that takes no attributes: ask again next question
        pass


# -- native tool calling ---------------------------------------------------------------------------

def _native_loop(run: _Run, strict: bool, first: _FirstSearch | None = None) -> SystemAnswer:
    config = run.config
    tools = run.toolbox.specs()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompts.SYSTEM_PROMPT},
        {"role": "user", "content": prompts.QUESTION_TEMPLATE.format(question=run.question.question)},
    ]
    if first is not None:  # as if the model had called it: an assistant tool call, then its result
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": FIRST_SEARCH_CALL_ID, "type": "function",
            "function": {"name": "hybrid_search", "arguments": _canonical_json(first.arguments)}}]})
        messages.append({"role": "tool", "tool_call_id": FIRST_SEARCH_CALL_ID, "content": first.result.text})
    used_tool = first is not None
    for step in range(config.max_steps - 1):  # the last of the max_steps calls is _finish's
        if run.timed_out():
            return _finish(run, messages, FLAG_TIMEOUT, "native")
        try:
            result = run.models.chat(role=AGENT_ROLE, messages=messages, tools=tools, tool_choice="auto",
                                     max_tokens=config.max_tokens)
        except ModelEndpointError as exc:
            if not strict and step == 0 and _refuses_tools(exc):
                _remember_refusal(run.models)
                raise _SwitchToJson(f"endpoint refused tools: HTTP {exc.status}") from None
            raise
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.tool_calls]
        run.model_step("native", text=result.text, tool_calls=calls, finish_reason=result.finish_reason,
                       usage=result.usage)
        if not result.tool_calls:
            if not strict and not used_tool:
                raise _SwitchToJson(prompts.NO_TOOL_FIRST_STEP_NOTE)
            text = (result.text or "").strip()
            if text:
                return run.answer(text)
            return _finish(run, messages, FLAG_AGENT_FAILURE, "native")  # an empty reply: ask once more
        used_tool = True
        messages.append(result.to_message())
        for call in result.tool_calls:
            tool_result = run.run_tool(call.name, call.arguments, call.id, call.arguments_error)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_result.text})
    return _finish(run, messages, FLAG_AGENT_FAILURE, "native")


# -- JSON actions ----------------------------------------------------------------------------------

def _json_loop(run: _Run, first: _FirstSearch | None = None) -> SystemAnswer:
    config = run.config
    tools = run.toolbox.specs()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompts.json_mode_system_prompt(tools)},
        {"role": "user", "content": prompts.QUESTION_TEMPLATE.format(question=run.question.question)},
    ]
    results: list[str] = []  # what the tools returned, as shown: the reader's excerpts
    if first is not None:  # as if the model had asked for it: its action, then the result
        messages.append({"role": "assistant", "content": _action_json(
            AgentAction(tool="hybrid_search", arguments=first.arguments))})
        results.append(prompts.TOOL_RESULT_TEMPLATE.format(tool="hybrid_search", step=1, result=first.result.text))
        messages.append({"role": "user", "content": results[-1]})
    # the last of the max_steps calls is _finish's; a native first reply (auto mode) was one of them
    for step in range(max(0, config.max_steps - 1 - run.model_calls)):
        if run.timed_out():
            return _finish(run, messages, FLAG_TIMEOUT, "json")
        try:
            schema = action_schema(step, searched=first is not None)
            result = run.models.structured(role=AGENT_ROLE, messages=messages, schema=schema,
                                           max_tokens=config.max_tokens)
        except StructuredOutputError as exc:
            run.model_step("json", text=exc.raw_text, tool_calls=[], usage=exc.usage)
            run.note("invalid_action", error=exc.validation_error[:500])
            return _finish(run, messages, FLAG_AGENT_FAILURE, "json")
        action: AgentAction = result.value.as_action() if schema is FirstAgentAction else result.value
        if action.tool:
            calls = [{"id": None, "name": action.tool, "arguments": action.arguments or {}}]
            run.model_step("json", text=result.raw_text, tool_calls=calls, usage=result.usage)
            tool_result = run.run_tool(action.tool, action.arguments or {})
            messages.append({"role": "assistant", "content": _action_json(action)})
            results.append(prompts.TOOL_RESULT_TEMPLATE.format(tool=action.tool, step=run.tool_calls,
                                                               result=tool_result.text))
            messages.append({"role": "user", "content": results[-1]})
            continue
        run.model_step("json", text=result.raw_text, tool_calls=[], usage=result.usage)
        return _answer(run, results)
    return _finish(run, messages, FLAG_AGENT_FAILURE, "json")


def _answer(run: _Run, excerpts: list[str]) -> SystemAnswer:
    """JSON actions choose the tools; the answer is one plain-text call to a reader that sees the
    question and what the tools returned, nothing else. Asked inside a JSON action,
    Qwen2.5-Coder-1.5B copied the hits word for word; asked after the whole action transcript it
    answered "which days" with dates and "how many scenes" with "the chat does not say", from hits
    that held both answers (lite run, messages 18 and 156)."""
    reader = [{"role": "system", "content": prompts.READER_SYSTEM_PROMPT},
              {"role": "user", "content": prompts.READER_TEMPLATE.format(
                  excerpts="\n\n".join(excerpts) or "(none)", question=run.question.question)}]
    result = run.models.chat(role=AGENT_ROLE, messages=reader, max_tokens=run.config.final_max_tokens)
    run.model_step("json", text=result.text, tool_calls=[], finish_reason=result.finish_reason, usage=result.usage,
                   final=True)
    text = _unwrap_json_answer((result.text or "").strip())
    return run.answer(text) if text else run.answer("", [FLAG_AGENT_FAILURE])


def _action_json(action: AgentAction) -> str:
    """The action as the assistant's turn, in one canonical form (requests must be stable)."""
    return _canonical_json(action.model_dump())


def _canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# -- the last call -----------------------------------------------------------------------------------

def _finish(run: _Run, messages: list[dict[str, Any]], flag: str, mode: str) -> SystemAnswer:
    """The step limit or the time is up: one call without tools for the best answer so far."""
    run.note("limit_reached", reason="timeout" if flag == FLAG_TIMEOUT else "steps_or_no_answer",
             model_calls=run.model_calls)
    final_messages = list(messages) + [{"role": "user", "content": prompts.FINAL_NUDGE}]
    # Infrastructure errors (endpoint, budget, cassette) propagate from here as everywhere.
    result = run.models.chat(role=AGENT_ROLE, messages=final_messages,
                             max_tokens=run.config.final_max_tokens)
    text = (result.text or "").strip()
    run.model_step(mode, text=result.text, tool_calls=[], finish_reason=result.finish_reason,
                   usage=result.usage, final=True)
    if text and mode == "json":
        text = _unwrap_json_answer(text)
    if text:
        return run.answer(text, [FLAG_LIMIT_REACHED])
    return run.answer("", [flag])


def _unwrap_json_answer(text: str) -> str:
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

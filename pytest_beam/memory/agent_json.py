"""The agent over JSON actions: every step is a ``models.structured(...)`` call whose reply is an
:class:`AgentAction` (a tool and its arguments, or none when the model has what it needs); the
answer is then one plain-text call to a reader of the tools' results. Works with any model that
can return JSON (grammar-constrained endpoints always can)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..llm.errors import StructuredOutputError
from ..llm.wire import JsonObject, WireMessage
from ..system import FLAG_AGENT_FAILURE, FLAG_TIMEOUT, SystemAnswer, TracedToolCall
from . import prompts_agent as prompts
from .agent_run import (
    AGENT_ROLE,
    AgentRun,
    FirstSearch,
    canonical_json,
    finish,
    unwrap_json_answer,
)

ToolName = Literal["hybrid_search", "entity_statements", "timeline", "standing_rules", "topic_sessions",
                   "session_outline", "read_messages", "cypher"]


class AgentAction(BaseModel):
    """One step of the JSON-action mode: a tool call, or null when the model has what it needs;
    the answer itself is then asked of a reader, in plain text (``prompts.READER_TEMPLATE``)."""

    model_config = ConfigDict(extra="forbid")

    tool: ToolName | None = Field(default=None,
                                  description="The tool to call, or null when you have what you need to answer.")
    arguments: JsonObject | None = Field(default=None, description="The tool's arguments.")


class FirstAgentAction(BaseModel):
    """The first JSON action must call a tool when the harness has not searched: small models given
    the choice answered from nothing (measured on Qwen2.5-Coder-1.5B: it skipped the tools unless
    the schema required one)."""

    model_config = ConfigDict(extra="forbid")

    tool: ToolName = Field(description="The tool to call first: look in the memory before answering.")
    arguments: JsonObject = Field(description="The tool's arguments.")

    def as_action(self) -> AgentAction:
        return AgentAction(tool=self.tool, arguments=self.arguments)


def action_schema(step: int, searched: bool = False) -> type[BaseModel]:
    """The JSON schema of step ``step`` (0 = first): a tool call first unless the harness has
    already searched (``searched``), then a tool or the answer."""
    return FirstAgentAction if step == 0 and not searched else AgentAction


def json_loop(run: AgentRun, first: FirstSearch | None = None) -> SystemAnswer:
    config = run.config
    tools = run.toolbox.specs()
    messages: list[WireMessage] = [
        {"role": "system", "content": prompts.json_mode_system_prompt(tools)},
        {"role": "user", "content": prompts.QUESTION_TEMPLATE.format(question=run.question.question)},
    ]
    results: list[str] = []  # what the tools returned, as shown: the reader's excerpts
    if first is not None:  # as if the model had asked for it: its action, then the result
        messages.append({"role": "assistant", "content": _action_json(
            AgentAction(tool="hybrid_search", arguments=first.arguments))})
        results.append(prompts.TOOL_RESULT_TEMPLATE.format(tool="hybrid_search", step=1, result=first.result.text))
        messages.append({"role": "user", "content": results[-1]})
    # the last of the max_steps calls is finish's; a native first reply (auto mode) was one of them
    for step in range(max(0, config.max_steps - 1 - run.model_calls)):
        if run.timed_out():
            return finish(run, messages, FLAG_TIMEOUT, "json")
        try:
            schema = action_schema(step, searched=first is not None)
            result = run.models.structured(role=AGENT_ROLE, messages=messages, schema=schema,
                                           max_tokens=config.max_tokens)
        except StructuredOutputError as exc:
            run.model_step("json", text=exc.raw_text, tool_calls=[], usage=exc.usage)
            run.note("invalid_action", error=exc.validation_error[:500])
            return finish(run, messages, FLAG_AGENT_FAILURE, "json")
        action: AgentAction = result.value.as_action() if schema is FirstAgentAction else result.value
        if action.tool:
            calls: list[TracedToolCall] = [{"id": None, "name": action.tool, "arguments": action.arguments or {}}]
            run.model_step("json", text=result.raw_text, tool_calls=calls, usage=result.usage)
            tool_result = run.run_tool(action.tool, action.arguments or {})
            messages.append({"role": "assistant", "content": _action_json(action)})
            results.append(prompts.TOOL_RESULT_TEMPLATE.format(tool=action.tool, step=run.tool_calls,
                                                               result=tool_result.text))
            messages.append({"role": "user", "content": results[-1]})
            continue
        run.model_step("json", text=result.raw_text, tool_calls=[], usage=result.usage)
        return _answer(run, results)
    return finish(run, messages, FLAG_AGENT_FAILURE, "json")


def _answer(run: AgentRun, excerpts: list[str]) -> SystemAnswer:
    """JSON actions choose the tools; the answer is one plain-text call to a reader that sees the
    question and what the tools returned, nothing else. Asked inside a JSON action,
    Qwen2.5-Coder-1.5B copied the hits word for word; asked after the whole action transcript it
    answered "which days" with dates and "how many scenes" with "the chat does not say", from hits
    that held both answers (lite run, messages 18 and 156)."""
    reader: list[WireMessage] = [{"role": "system", "content": prompts.READER_SYSTEM_PROMPT},
              {"role": "user", "content": prompts.READER_TEMPLATE.format(
                  excerpts="\n\n".join(excerpts) or "(none)", question=run.question.question)}]
    result = run.models.chat(role=AGENT_ROLE, messages=reader, max_tokens=run.config.final_max_tokens)
    run.model_step("json", text=result.text, tool_calls=[], finish_reason=result.finish_reason, usage=result.usage,
                   final=True)
    text = unwrap_json_answer((result.text or "").strip())
    return run.answer(text) if text else run.answer("", [FLAG_AGENT_FAILURE])


def _action_json(action: AgentAction) -> str:
    """The action as the assistant's turn, in one canonical form (requests must be stable)."""
    return canonical_json(action.model_dump())

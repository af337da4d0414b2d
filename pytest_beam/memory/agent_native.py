"""The agent over the endpoint's own tool calling (``tools`` in the request): a reply without a
tool call is the final answer. In ``auto`` mode a refusal of tools, or a first reply without a
tool call, hands the question to the JSON actions (:class:`SwitchToJson`; module docstring of
:mod:`pytest_beam.memory.agent`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..llm.errors import ModelEndpointError
from ..system import FLAG_AGENT_FAILURE, FLAG_TIMEOUT, SystemAnswer, TracedToolCall
from . import prompts_agent as prompts
from .agent_run import (
    AGENT_ROLE,
    FIRST_SEARCH_CALL_ID,
    AgentRun,
    FirstSearch,
    canonical_json,
    finish,
)

if TYPE_CHECKING:
    from ..llm.wire import WireMessage
    from .model_protocols import AgentModels



def _refuses_tools(exc: ModelEndpointError) -> bool:
    if exc.status not in (400, 422):
        return False
    text = f"{exc.reason or ''} {exc}".lower()
    return "tool" in text or "function" in text


class SwitchToJson(Exception):
    """This question goes on with JSON actions, for ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# The refusal (rule (a) in the docstring of memory/agent.py) is remembered on the model client
# the session owns (session/model_side.py), as the client remembers its own endpoint quirks (seed, structured-output
# mode): no module-level state.
REFUSED_NATIVE_ATTR = "agent_refused_native_tools"


def is_refused(models: AgentModels) -> bool:
    return bool(getattr(models, REFUSED_NATIVE_ATTR, False))


def _remember_refusal(models: AgentModels) -> None:
    try:
        setattr(models, REFUSED_NATIVE_ATTR, True)
    except AttributeError:  # a client that takes no attributes: ask again next question
        pass


def native_loop(run: AgentRun, strict: bool, first: FirstSearch | None = None) -> SystemAnswer:
    config = run.config
    tools = run.toolbox.specs()
    messages: list[WireMessage] = [
        {"role": "system", "content": prompts.SYSTEM_PROMPT},
        {"role": "user", "content": prompts.QUESTION_TEMPLATE.format(question=run.question.question)},
    ]
    if first is not None:  # as if the model had called it: an assistant tool call, then its result
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": FIRST_SEARCH_CALL_ID, "type": "function",
            "function": {"name": "hybrid_search", "arguments": canonical_json(first.arguments)}}]})
        messages.append({"role": "tool", "tool_call_id": FIRST_SEARCH_CALL_ID, "content": first.result.text})
    used_tool = first is not None
    for step in range(config.max_steps - 1):  # the last of the max_steps calls is finish's
        if run.timed_out():
            return finish(run, messages, FLAG_TIMEOUT, "native")
        try:
            result = run.models.chat(role=AGENT_ROLE, messages=messages, tools=tools, tool_choice="auto",
                                     max_tokens=config.max_tokens)
        except ModelEndpointError as exc:
            if not strict and step == 0 and _refuses_tools(exc):
                _remember_refusal(run.models)
                raise SwitchToJson(f"endpoint refused tools: HTTP {exc.status}") from None
            raise
        calls: list[TracedToolCall] = [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                       for c in result.tool_calls]
        run.model_step("native", text=result.text, tool_calls=calls, finish_reason=result.finish_reason,
                       usage=result.usage)
        if not result.tool_calls:
            if not strict and not used_tool:
                raise SwitchToJson(prompts.NO_TOOL_FIRST_STEP_NOTE)
            text = (result.text or "").strip()
            if text:
                return run.answer(text)
            return finish(run, messages, FLAG_AGENT_FAILURE, "native")  # an empty reply: ask once more
        used_tool = True
        messages.append(result.to_message())
        for call in result.tool_calls:
            tool_result = run.run_tool(call.name, call.arguments, call.id, call.arguments_error)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_result.text})
    return finish(run, messages, FLAG_AGENT_FAILURE, "native")

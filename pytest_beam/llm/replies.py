"""What a model call returns, and how a raw chat response body becomes one.

Live, cached and replayed responses are parsed from the same raw bytes by the same code here, so
a replay is indistinguishable from the live call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Required, TypedDict

from .meter import Usage, UsageJson
from .wire import JsonObject, WireMessage


class ToolCallRecord(TypedDict):
    """A reply's tool call as the trace records it (:meth:`ToolCall.to_dict`)."""

    id: str
    name: str
    arguments: JsonObject
    raw_arguments: str


class CallEvent(TypedDict, total=False):
    """One model call as the client's ``trace`` callback gets it (chat or embeddings, answered or
    failed, never the key); the run's trace file adds where in the run it was made."""

    kind: Required[Literal["chat", "embeddings"]]
    role: Required[str]
    model: Required[str]
    messages: int  # chat: how many messages were sent
    tools: list[Any]  # chat: the tools' names (wire.tool_name)
    response_format: str | None  # chat: the type asked for
    fingerprint: str
    inputs: int  # embeddings: how many texts
    text: str | None
    tool_calls: list[ToolCallRecord]
    finish_reason: str | None
    usage: UsageJson
    latency_s: float
    cached: bool
    replayed: bool
    attempts: int
    structured_mode: str | None
    dimensions: int  # embeddings: of the vectors
    error: str  # a call that failed for good
    via: Literal["relay"]  # a call a library made through the model relay ...
    relay_system: str  # ... for this system


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: JsonObject
    raw_arguments: str = ""
    arguments_error: str | None = None  # set when raw_arguments is not a JSON object

    def to_dict(self) -> ToolCallRecord:
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "raw_arguments": self.raw_arguments}


@dataclass
class ChatResult:
    text: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage
    latency_s: float
    model: str
    cached: bool
    replayed: bool = False
    raw: bytes = field(default=b"", repr=False)  # the response body exactly as received
    # the response_format type the reply was asked with ("json_schema"), None when sent plain
    # (none asked, or the endpoint refused it: see ModelClient.chat)
    response_format: str | None = None

    def to_message(self) -> WireMessage:
        """The assistant message to append to the conversation (tool calls included)."""
        msg: WireMessage = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in self.tool_calls
            ]
        return msg


@dataclass
class StructuredResult:
    value: Any  # an instance of the schema
    attempts: int
    usage: Usage  # summed over the attempts
    raw_text: str | None
    mode: str  # "json_schema", "json_object" or "text": how the endpoint was asked
    cached: bool = False
    replayed: bool = False


def tool_arguments(raw_args: Any) -> tuple[JsonObject, str, str | None]:
    """``(arguments, raw text, error)`` of a tool call's ``arguments`` (a JSON string or an object)."""
    if isinstance(raw_args, dict):
        return raw_args, json.dumps(raw_args), None
    raw_text = raw_args or ""
    try:
        parsed = json.loads(raw_text) if raw_text.strip() else {}
    except ValueError as exc:
        return {}, raw_text, f"arguments are not valid JSON: {exc}"
    if not isinstance(parsed, dict):
        return {}, raw_text, "arguments are not a JSON object"
    return parsed, raw_text, None


def parse_chat(data: JsonObject) -> tuple[str | None, list[ToolCall], str | None]:
    """``(text, tool calls, finish_reason)`` of a decoded chat response (shape checked by the decoder)."""
    choice = data["choices"][0]
    message = choice.get("message") or {}
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    calls: list[ToolCall] = []
    for i, raw_call in enumerate(message.get("tool_calls") or []):
        fn = raw_call.get("function") or {}
        args, raw_text, err = tool_arguments(fn.get("arguments"))
        calls.append(ToolCall(id=str(raw_call.get("id") or f"call_{i}"), name=str(fn.get("name") or ""),
                              arguments=args, raw_arguments=raw_text, arguments_error=err))
    return content, calls, choice.get("finish_reason")

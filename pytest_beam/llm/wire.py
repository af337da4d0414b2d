"""The OpenAI chat format as pytest-beam writes it: messages, tool specs, tool calls, the response
format, and the JSON objects that come back.

TypedDicts, not classes: they are the plain dicts the endpoint is sent and the cache key, the
cassette fingerprint and the trace are made of (a replay must send what was recorded, byte for
byte), so typing them changes nothing at run time. A request a library sends through the model
relay (``relay.py``) is forwarded as it came and may hold more (content parts, names): these
types say what the harness writes, not everything the wire allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Required, TypeAlias, TypedDict

__all__ = ["JsonObject", "WireFunctionCall", "WireToolCall", "WireMessage", "FunctionSpec", "ToolSpec",
           "NamedToolChoice", "JsonSchemaFormat", "ResponseFormat", "tool_name"]

#: A JSON object whose keys its writer chooses: a response body, a model's reply, a tool call's
#: arguments, a JSON schema. Open by nature (a model may write anything); the code that reads one
#: checks each key it uses (``isinstance``, ``.get``) or validates it with a pydantic model, and
#: ``Any`` lets those checks narrow it where ``JsonValue`` would need a cast at every step.
JsonObject: TypeAlias = dict[str, Any]


class WireFunctionCall(TypedDict):
    name: str
    arguments: str  # the arguments as JSON text, as the model wrote them


class WireToolCall(TypedDict):
    """A tool call in an assistant message."""

    id: str
    type: Literal["function"]
    function: WireFunctionCall


class WireMessage(TypedDict, total=False):
    """One chat message: ``role`` always; ``content`` (None in an assistant turn that only calls
    tools); ``tool_calls`` in an assistant turn; ``tool_call_id`` in a tool result."""

    role: Required[Literal["system", "user", "assistant", "tool"]]
    content: str | None
    tool_calls: list[WireToolCall]
    tool_call_id: str
    name: str


class FunctionSpec(TypedDict):
    """A tool's function: its name, what it does, and its arguments' JSON schema."""

    name: str
    description: str
    parameters: JsonObject


class ToolSpec(TypedDict):
    """One entry of a request's ``tools``."""

    type: Literal["function"]
    function: FunctionSpec


class _ChosenFunction(TypedDict):
    name: str


class NamedToolChoice(TypedDict):
    """A ``tool_choice`` that names the tool to call (the other choices are "auto", "none", "required")."""

    type: Literal["function"]
    function: _ChosenFunction


class JsonSchemaFormat(TypedDict, total=False):
    name: Required[str]
    schema: Required[JsonObject]
    strict: bool


class ResponseFormat(TypedDict, total=False):
    """A request's ``response_format``: ``{"type": "json_schema", "json_schema": {...}}``, or
    ``{"type": "json_object"}``."""

    type: Required[Literal["json_schema", "json_object", "text"]]
    json_schema: JsonSchemaFormat


def tool_name(tool: Mapping[str, Any]) -> Any:
    """A tool's name, for the trace; None when it has none (a tool a library sends through the
    relay is forwarded as it came, and may be shaped otherwise)."""
    function: Any = tool.get("function", {})
    return function.get("name", tool.get("name"))

"""Turning a model's text reply into a validated pydantic object (no I/O, no openai)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .wire import JsonObject, ResponseFormat, WireMessage

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)
MAX_ERROR_CHARS = 2000


class StructuredParseError(ValueError):
    """The reply holds no JSON object, or the object does not validate."""


def schema_name(schema: type) -> str:
    """A name acceptable to ``response_format.json_schema.name`` (``[A-Za-z0-9_-]{1,64}``)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", getattr(schema, "__name__", "") or "output")
    return name[:64] or "output"


def json_schema_format(schema: type[BaseModel]) -> ResponseFormat:
    """The ``response_format`` for a pydantic model (strict off: not every server supports it)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema_name(schema), "schema": schema.model_json_schema(), "strict": False},
    }


def schema_instruction(json_schema: JsonObject) -> str:
    return (
        "Reply with a single JSON object, and nothing else, that is valid for this JSON schema:\n"
        + json.dumps(json_schema, ensure_ascii=False, sort_keys=True)
    )


def with_schema_instruction(messages: list[WireMessage], json_schema: JsonObject) -> list[WireMessage]:
    """Put the schema into the system message (appended to an existing one, else a new one first)."""
    instruction = schema_instruction(json_schema)
    out = [m.copy() for m in messages]
    system = out[0].get("content") if out and out[0].get("role") == "system" else None
    if isinstance(system, str):
        out[0]["content"] = system.rstrip() + "\n\n" + instruction
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


def extract_json_object(text: str | None) -> JsonObject:
    """The first JSON object in ``text``: inside a ``` fence if there is one, else anywhere."""
    if not text or not text.strip():
        raise StructuredParseError("the reply is empty; expected a JSON object")
    candidates = [m.group(2) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                value = None
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    raise StructuredParseError("no JSON object found in the reply")


def parse_structured(text: str | None, schema: type[BaseModel]) -> Any:
    """Parse and validate; raise :class:`StructuredParseError` with a readable message."""
    from pydantic import ValidationError

    obj = extract_json_object(text)
    try:
        return schema.model_validate(obj)
    except ValidationError as exc:
        message = str(exc)
        if len(message) > MAX_ERROR_CHARS:
            message = message[:MAX_ERROR_CHARS] + " ..."
        raise StructuredParseError(message) from None

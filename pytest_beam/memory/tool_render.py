"""How a tool's result is written for the agent: compact JSON, bounded, deterministic.

Every list is ordered with tie-breakers, JSON is written with a fixed key order and no
timestamps, so the same graph and the same arguments give the same text byte for byte (model
replies are recorded and replayed keyed by the exact request). A result longer than its limit
drops items and says so, so the agent knows to narrow its request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from .search_hits import iso

#: A tool result's object as the model reads it (JSON): a header, a statement, a hit, an event, a
#: message. Open by nature: each tool puts its own fields in (and drops empty ones), and the model
#: reads the text; the agent's code reads back only the message ids (``ids_in``).
ToolJson: TypeAlias = dict[str, Any]

CUT_MARKER = "…[cut: {n} more characters]"


@dataclass
class ToolResult:
    text: str
    message_ids: list[int] = field(default_factory=list)
    is_error: bool = False

    @property
    def chars(self) -> int:
        return len(self.text)


def cut(text: str | None, limit: int) -> str:
    """``text`` no longer than about ``limit`` characters, with a visible marker when cut."""
    text = text or ""
    if len(text) <= limit:
        return text
    return text[:limit] + CUT_MARKER.format(n=len(text) - limit)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _json_default(value: Any) -> Any:
    text = iso(value)
    return text if text is not None else str(value)


ResultItem = TypeVar("ResultItem")  # a result item: a dict, or a short list such as [message id, head]


def bounded(header: ToolJson, items: list[ResultItem], limit: int, items_key: str = "results",
            drop_order: list[int] | None = None) -> tuple[str, list[ResultItem]]:
    """JSON of ``header`` plus as many ``items`` as fit in ``limit`` characters.

    Items are dropped in ``drop_order`` (indexes; default: from the end) and the count of
    dropped items is stated in the result, so the agent knows to narrow its request.
    """
    keep = list(range(len(items)))
    order = list(drop_order) if drop_order is not None else list(reversed(keep))
    dropped = 0
    while True:
        shown = [items[i] for i in keep]
        doc = dict(header)
        doc[items_key] = shown
        if dropped:
            doc["omitted"] = f"{dropped} more item(s) did not fit; narrow the request"
        text = dumps(doc)
        if len(text) <= limit or not keep:
            if len(text) > limit:
                text = cut(text, limit)
            return text, shown
        victim = order.pop(0)
        keep.remove(victim)
        dropped += 1


def ids_in(items: list[ToolJson], *keys: str) -> list[int]:
    ids: set[int] = set()
    for item in items:
        for key in keys:
            value = item.get(key)
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, list):
                ids.update(v for v in value if isinstance(v, int))
    return sorted(ids)


def first_session(pairs: list[Any]) -> tuple[int | None, str | None]:
    pairs = sorted((p for p in pairs if p and p[0] is not None), key=lambda p: p[0])
    return (pairs[0][0], iso(pairs[0][1])) if pairs else (None, None)


def sources(pairs: list[Any]) -> list[int]:
    return [int(i) for _, i in sorted((o if o is not None else i, i) for o, i in pairs if i is not None)]


def plain(value: Any, limit: int) -> Any:
    """A JSON-safe, bounded, deterministic copy of a value from ``record.data()`` (nodes come
    as property maps). Embeddings are left out."""
    if isinstance(value, str):
        return cut(value, limit)
    if isinstance(value, (list, tuple)):
        if len(value) > 32 and all(isinstance(v, float) for v in value):
            return f"[{len(value)} numbers]"
        return [plain(v, limit) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v, limit) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if k != "embedding"}
    if isinstance(value, float):
        return round(value, 6)
    if value is None or isinstance(value, (bool, int)):
        return value
    text = iso(value)
    return text if text is not None else str(value)


_MESSAGE_ID_KEYS = {"message_id", "message_ids", "m.id", "msg_id", "source_message_ids"}


def collect_message_ids(value: Any, out: set[int]) -> None:
    """Message ids in Cypher rows: a map that looks like a Message node (id, role, text), or a
    value under a message-id column name. A heuristic: the trace counts what the agent saw."""
    if isinstance(value, dict):
        if {"id", "role", "text"} <= value.keys() and isinstance(value.get("id"), int):
            out.add(value["id"])
        for key, v in value.items():
            if key.lower() in _MESSAGE_ID_KEYS:
                if isinstance(v, int) and not isinstance(v, bool):
                    out.add(v)
                elif isinstance(v, list):
                    out.update(i for i in v if isinstance(i, int) and not isinstance(i, bool))
            collect_message_ids(v, out)
    elif isinstance(value, list):
        for v in value:
            collect_message_ids(v, out)

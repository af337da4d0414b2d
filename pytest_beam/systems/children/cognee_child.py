"""Cognee's child process: Cognee in its own environment, its data in the conversation's folder.

Requests (protocol.py): `start` (Cognee configured by environment and its data and system roots
set to folders the parent chose), `add` (one session's text added to the dataset, then `cognify`
on it: chunks, graph extraction, summaries), `search` (Cognee's default search type with
`only_context`, so Cognee retrieves and the parent's answering model answers), `close`.
"""

from __future__ import annotations

import os
from typing import Any

from .protocol import serve

DATASET = "beam"
state: dict[str, Any] = {}


async def start(request: dict[str, Any]) -> dict[str, Any]:
    config = request["config"]
    for key, value in config["env"].items():
        os.environ[key] = str(value)
    import cognee

    cognee.config.data_root_directory(config["data_root"])
    cognee.config.system_root_directory(config["system_root"])
    state["cognee"] = cognee
    from importlib.metadata import version

    return {"version": version("cognee")}


async def add(request: dict[str, Any]) -> dict[str, Any]:
    cognee = state["cognee"]
    await cognee.add(request["text"], dataset_name=DATASET)
    await cognee.cognify(datasets=[DATASET])
    return {}


def _plain(value: Any) -> Any:
    """What Cognee returns, as JSON (its models and UUIDs as their fields and strings)."""
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


async def search(request: dict[str, Any]) -> dict[str, Any]:
    cognee = state["cognee"]
    from cognee import SearchType

    kind = SearchType[request["search_type"]]
    found = await cognee.search(query_text=request["query"], query_type=kind, datasets=[DATASET],
                                top_k=request["top_k"], only_context=True)
    return {"results": _plain(found)}


async def close(request: dict[str, Any]) -> dict[str, Any]:
    state.clear()
    return {}


if __name__ == "__main__":
    raise SystemExit(serve({"start": start, "add": add, "search": search, "close": close}))

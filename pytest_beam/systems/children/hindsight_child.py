"""Hindsight's child process: its MemoryEngine in its own environment, its models behind the relay.

Requests (protocol.py): `start` (the engine on the PostgreSQL the parent started, its LLM and
embeddings at the relay, its reranker RRF), `retain` (one session as Hindsight's own benchmarks
retain one: the messages as JSON, a context line, the session's date as event date, one document
id per session), `recall` (Hindsight's recall as its benchmark runner calls it: the high budget,
entities and chunks included), `close`.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from .protocol import Message, Unusable, serve

BANK = "beam"
state: Message = {}


async def start(request: Message) -> Message:
    config = request["config"]
    for key, value in config["env"].items():
        os.environ[key] = str(value)
    from hindsight_api import MemoryEngine

    engine = MemoryEngine(db_url=config["db_url"], memory_llm_provider="openai", memory_llm_api_key="pytest-beam-relay",
                          memory_llm_model=config["model"], memory_llm_base_url=config["base_url"])
    await engine.initialize()
    state["engine"] = engine
    return {"version": _version()}


def _version() -> str:
    from importlib.metadata import version

    return version("hindsight-api-slim")


def _context() -> Any:
    from hindsight_api.models import RequestContext

    return RequestContext()


async def retain(request: Message) -> Message:
    """Retain one session. Hindsight fails the whole retain when a chunk's extraction fails (nothing of
    the session is committed): that is reported as unusable, and the run goes on."""
    engine = state["engine"]
    date = dt.datetime.combine(dt.date.fromisoformat(request["date"]), dt.time(), dt.UTC) if request["date"] else None
    try:
        ids = await engine.retain_async(BANK, request["content"], context=request["context"], event_date=date,
                                        document_id=request["document_id"], request_context=_context())
    except RuntimeError as exc:
        if not str(exc).startswith("Fact extraction failed"):
            raise
        raise Unusable((str(exc).strip().splitlines() or [""])[0][:300]) from exc
    return {"memories": len(ids or [])}


async def recall(request: Message) -> Message:
    from hindsight_api.engine.memory_engine import Budget

    engine = state["engine"]
    found = await engine.recall_async(BANK, request["query"], budget=Budget.HIGH, max_tokens=request["max_tokens"],
                                      include_entities=True, max_entity_tokens=2048, include_chunks=True,
                                      request_context=_context())
    chunks = {key: info.chunk_text for key, info in (found.chunks or {}).items()}
    facts = []
    for fact in found.results:
        facts.append({"id": fact.id, "text": fact.text, "type": fact.fact_type, "occurred_start": fact.occurred_start,
                      "mentioned_at": fact.mentioned_at, "document_id": fact.document_id, "chunk_id": fact.chunk_id,
                      "chunk_text": chunks.get(fact.chunk_id or ""),
                      "score": fact.scores.final if fact.scores is not None else None})
    return {"facts": facts}


async def close(request: Message) -> Message:
    engine = state.pop("engine", None)
    if engine is not None:
        await engine.close()
    return {}


if __name__ == "__main__":
    raise SystemExit(serve({"start": start, "retain": retain, "recall": recall, "close": close}))

"""Ingest: documents into one conversation's temporal knowledge graph.

    report = ingest_documents(driver, database, documents, models, embedder, IngestConfig())

Steps: cache check -> schema -> sessions, messages (embedded), chunks -> extraction per chunk,
concurrently -> entity resolution -> updates over time (SUPERSEDES / CONTRADICTS) -> stats ->
the IngestMarker, written last so that a partial ingest is never taken for a finished one.
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

from ..data.records import Document
from ..system import IngestReport
from .chunking import DEFAULT_CHUNK_TOKENS, Chunk, chunk_documents, document_order
from .graph_schema import SCHEMA_VERSION, install_schema

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IngestConfig:
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS
    concurrency: int = 4
    max_llm_pairs: int = 500
    batch_pairs: int = 20  # pairs per resolution / update call
    extraction_max_tokens: int = 2048
    resolution_max_tokens: int = 1024
    write_every: int = 16  # chunks per batched write
    reset_graph: bool = True  # remove an earlier ingest's nodes when the marker does not match
    extraction_model: str | None = None  # for the cache key; default: the client's model per role
    resolution_model: str | None = None


def _model_name(models: Any, role: str, explicit: str | None) -> str:
    if explicit:
        return explicit
    roles = getattr(models, "models", None)
    if roles is not None and hasattr(roles, "for_role"):
        return str(roles.for_role(role))
    return "unknown"


def document_hash(document: Document) -> str:
    return hashlib.sha256(document.model_dump_json().encode("utf-8")).hexdigest()


def ingest_settings(documents: Sequence[Document], models: Any, embedder: Any, config: IngestConfig) -> dict[str, Any]:
    """Everything the finished graph depends on: the ingest cache key is their hash."""
    from .. import __version__
    from .tokens import tokenizer_name

    return {
        "documents": [document_hash(d) for d in document_order(documents)],
        "schema_version": SCHEMA_VERSION,
        "extraction_model": _model_name(models, "extraction", config.extraction_model),
        "resolution_model": _model_name(models, "resolution", config.resolution_model),
        "embedder": embedder.name,
        "chunk_tokens": config.chunk_tokens,
        "tokenizer": tokenizer_name(),
        "max_llm_pairs": config.max_llm_pairs,
        "batch_pairs": config.batch_pairs,
        "package_version": __version__,
    }


def ingest_key(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()


def _report_from(stored: dict[str, Any]) -> IngestReport:
    return IngestReport(
        cache_hit=True, chunks=int(stored.get("chunks", 0)),
        empty_extractions=int(stored.get("empty_extractions", 0)),
        entities_by_type=dict(stored.get("entities_by_type", {})),
        relations_by_type=dict(stored.get("relations_by_type", {})),
        seconds=float(stored.get("seconds", 0.0)),
        notes=["ingest cache hit: the graph was built by an earlier run", *stored.get("notes", [])],
    )


def _embed_text(text: str, limit: int = 2000) -> str:
    return text[:limit]  # the local model reads 256 tokens; the rest only costs time


def ingest_documents(
    driver: Any,
    database: str,
    documents: Sequence[Document],
    models: Any,
    embedder: Any,
    config: IngestConfig | None = None,
    progress: Progress | None = None,
) -> IngestReport:
    config = config or IngestConfig()
    started = time.monotonic()
    from . import store
    from .extraction import ChunkExtraction, extract_chunk, rows_of
    from .resolution import EntityResolver
    from .temporal import UpdateLinker

    settings = ingest_settings(documents, models, embedder, config)
    key = ingest_key(settings)
    stored = store.find_marker(driver, database, key)
    if stored is not None:
        return _report_from(stored)

    install_schema(driver, database, embedder.dimensions)
    if config.reset_graph:
        store.reset_graph(driver, database)

    ordered = document_order(documents)
    chunks = chunk_documents(ordered, config.chunk_tokens)
    messages = _write_structure(driver, database, ordered, chunks)
    if progress:
        progress(0, len(chunks))
    # Message embeddings are CPU work; extraction is waiting on the model: let them overlap.
    embedding = ThreadPoolExecutor(max_workers=1, thread_name_prefix="beam-embed")
    message_vectors = embedding.submit(embedder.embed, [_embed_text(m["text"]) for m in messages])
    embedding.shutdown(wait=False)

    notes: list[str] = []
    empty: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, config.concurrency), thread_name_prefix="beam-ingest") as pool:
        futures: dict[Future, int] = {pool.submit(extract_chunk, models, chunk, config.extraction_max_tokens): n
                                      for n, chunk in enumerate(chunks)}
        results: dict[int, ChunkExtraction] = {}
        next_to_write = 0
        pending: list[ChunkExtraction] = []
        done_count = 0
        try:
            remaining = set(futures)
            while remaining:
                finished, remaining = wait(remaining, return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: futures[f]):
                    results[futures[future]] = future.result()  # model errors propagate here
                    done_count += 1
                    if progress:
                        progress(done_count, len(chunks))
                # write in chunk order, whatever order the calls finished in
                while next_to_write in results:
                    pending.append(results.pop(next_to_write))
                    next_to_write += 1
                if len(pending) >= config.write_every or (not remaining and pending):
                    _write_extractions(driver, database, pending, embedder, rows_of, notes, empty)
                    pending = []
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        store.set_message_embeddings(driver, database, [
            {"id": m["id"], "embedding": v} for m, v in zip(messages, message_vectors.result())])

        resolver = EntityResolver(driver, database, models, embedder, pool, max_llm_pairs=config.max_llm_pairs,
                                  batch_pairs=config.batch_pairs, max_tokens=config.resolution_max_tokens)
        resolution = resolver.run()
        linker = UpdateLinker(driver, database, models, pool, max_llm_pairs=config.max_llm_pairs,
                              batch_pairs=config.batch_pairs, max_tokens=config.resolution_max_tokens)
        updates = linker.run()

    graph = store.graph_stats(driver, database)
    notes.extend(resolver.notes)
    notes.extend(linker.notes)
    r = resolution
    notes.append(
        f"resolution: {r.entities} entities, merged {r.merged_by_name} by name, {r.merged_by_similarity} by "
        f"similarity, {r.merged_by_model} by the model ({r.model_pairs} pairs asked in {r.model_calls} calls"
        f"{f', {r.invalid_replies} invalid replies' if r.invalid_replies else ''})"
    )
    u = updates
    notes.append(
        f"updates: {u.candidate_pairs} candidate pairs, {u.model_pairs} asked in {u.model_calls} calls: "
        f"{u.supersedes} supersedes, {u.contradicts} contradicts"
        f"{f', {u.invalid_replies} invalid replies' if u.invalid_replies else ''}"
    )
    if empty:
        notes.append(f"empty extractions (reply invalid after one retry): {', '.join(empty)}")
    seconds = time.monotonic() - started
    report = IngestReport(
        cache_hit=False, chunks=len(chunks), empty_extractions=len(empty),
        entities_by_type=graph["entities_by_type"], relations_by_type=graph["relations_by_type"],
        seconds=seconds, notes=notes,
    )
    stored_report = asdict(report)
    stored_report.pop("cache_hit")
    stored_report["resolution"] = asdict(resolution)
    stored_report["updates"] = asdict(updates)
    store.write_marker(driver, database, key, stored_report, settings)  # last: only a complete ingest
    return report


def _write_structure(driver: Any, database: str, documents: list[Document],
                     chunks: list[Chunk]) -> list[dict[str, Any]]:
    """Sessions, messages (embedded later, while extraction runs) and chunks; returns the messages."""
    from . import store

    sessions: dict[int, str | None] = {}
    messages: list[dict[str, Any]] = []
    seen: set[int] = set()
    for document in documents:
        sessions.setdefault(document.session_number,
                            document.session_date.isoformat() if document.session_date else None)
        for message in document.messages:
            if message.id in seen:
                continue
            seen.add(message.id)
            messages.append({"id": message.id, "role": message.role, "text": message.text,
                             "order": len(messages), "session": document.session_number})
    store.write_sessions(driver, database, [{"number": n, "date": d} for n, d in sorted(sessions.items())])
    store.write_messages(driver, database, messages)
    store.write_chunks(driver, database, [
        {"id": c.id, "index": c.index, "session": c.session_number, "message_ids": c.message_ids,
         "tokens": c.tokens, "document": c.document}
        for c in chunks
    ])
    return messages


def _write_extractions(driver: Any, database: str, done: list, embedder: Any, rows_of: Callable,
                       notes: list[str], empty: list[str]) -> None:
    from . import store

    entity_rows: list[dict[str, Any]] = []
    statement_rows: list[dict[str, Any]] = []
    for item in done:  # in chunk order
        if item.empty:
            empty.append(item.chunk.id)
            continue
        entities, statements = rows_of(item)
        entity_rows.extend(entities)
        statement_rows.extend(statements)
        for note in item.notes:
            if note not in notes:
                notes.append(note)
    if statement_rows:
        vectors = embedder.embed([_embed_text(s["text"]) for s in statement_rows])
        for row, vector in zip(statement_rows, vectors):
            row["embedding"] = vector
    store.write_entities(driver, database, entity_rows)
    store.write_statements(driver, database, statement_rows)

"""Ingest: documents into one conversation's temporal knowledge graph.

    report = ingest_documents(driver, database, documents, models, embedder, IngestConfig())

Steps: schema -> sessions, messages (embedded), chunks -> extraction per chunk, concurrently ->
entity resolution -> updates over time (SUPERSEDES / CONTRADICTS) -> stats. Every run builds
its graph: a second run pays no model call through the response cache (llm/), not through a
kept graph (services start an empty one for each conversation).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..data.records import Document
from ..services.access import CypherRow
from ..system import IngestReport
from .chunking import DEFAULT_CHUNK_TOKENS, Chunk, chunk_documents, document_order
from .graph_schema import install_schema

if TYPE_CHECKING:
    from neo4j import Driver

    from .embeddings import Embedder
    from .model_protocols import StructuredModels

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
    reset_graph: bool = True  # remove what an earlier ingest into this database left


# A message's vector is made from its first words. It is for finding the message, and a BEAM
# message says what it is about up front: bench/retrieval.py measured hybrid recall@10 of source
# messages over the 90 questions at 0.577 for the whole message (up to the model's 256 word
# pieces), 0.573 for 100 words, 0.562 for 60, 0.582 for 50, 0.577 for 40 and 0.562 for 25, while
# the embedding CPU falls about 4x from whole messages to 50 words, the largest single cost of an
# ingest before.
MESSAGE_EMBED_WORDS = 50


def message_embedding_text(text: str, max_words: int | None = None) -> str:
    """The head of a message that its vector is made from (``max_words`` <= 0: the whole text,
    which the local model still cuts at 256 word pieces)."""
    limit = MESSAGE_EMBED_WORDS if max_words is None else max_words
    if limit <= 0:
        return _embed_text(text)
    return " ".join(text.split(maxsplit=limit)[:limit])


def _embed_text(text: str, limit: int = 2000) -> str:
    return text[:limit]  # the local model reads 256 tokens; the rest only costs time


def ingest_documents(
    driver: Driver,
    database: str,
    documents: Sequence[Document],
    models: StructuredModels,
    embedder: Embedder,
    config: IngestConfig | None = None,
    progress: Progress | None = None,
) -> IngestReport:
    config = config or IngestConfig()
    started = time.monotonic()
    from . import store
    from .decisions import DecisionBudget
    from .extraction import extract_chunk, repeats_note, rows_of
    from .resolution import EntityResolver
    from .temporal import UpdateLinker

    ordered = document_order(documents)
    chunks = chunk_documents(ordered, config.chunk_tokens)
    messages = message_rows(ordered)
    notes: list[str] = []
    empty: list[str] = []
    # Three kinds of work overlap: the extraction calls wait on the model, embeddings are CPU (two
    # threads of their own: statements, and entities), and the writes wait on Neo4j. The calls go out
    # first; schema and structure are written while the first replies are awaited; each reply's
    # statements are embedded as it lands, and written in chunk order; entities whose text is
    # settled are embedded for resolution on a second thread. Message vectors are needed by nothing
    # before the end, so they are made while resolution and updates wait on the model.
    cpu = ThreadPoolExecutor(max_workers=1, thread_name_prefix="beam-embed")
    entity_cpu = ThreadPoolExecutor(max_workers=1, thread_name_prefix="beam-embed-entities")
    with _extraction_pool(max(1, config.concurrency)) as pool:
        extracting: dict[Future, int] = {pool.submit(extract_chunk, models, chunk, config.extraction_max_tokens): n
                                         for n, chunk in enumerate(chunks)}
        embedding: dict[Future, list[int]] = {}
        entity_vectors = _EntityVectors(embedder)
        try:
            install_schema(driver, database, embedder.dimensions)
            if config.reset_graph:
                store.reset_graph(driver, database)
            _write_structure(driver, database, ordered, chunks, messages)
            if progress:
                progress(0, len(chunks))
            extracted: dict[int, Any] = {}  # replies waiting for the embedder: embedded together
            ready: dict[int, _ChunkRows] = {}
            pending: list[_ChunkRows] = []
            next_to_write = 0
            done_count = 0
            remaining = set(extracting)
            while remaining:
                finished, remaining = wait(remaining, return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: extracting.get(f, -1)):
                    if future in extracting:
                        extracted[extracting[future]] = future.result()  # model errors propagate here
                        done_count += 1
                        if progress:
                            progress(done_count, len(chunks))
                    else:
                        ready.update(zip(embedding[future], future.result()))
                if extracted and all(f.done() for f in embedding):  # one embedding job at a time
                    numbers = sorted(extracted)
                    job = cpu.submit(_chunk_rows, [extracted.pop(n) for n in numbers], embedder, rows_of)
                    embedding[job] = numbers
                    remaining.add(job)
                # write in chunk order, whatever order the calls finished in
                while next_to_write in ready:
                    pending.append(ready.pop(next_to_write))
                    next_to_write += 1
                if len(pending) >= config.write_every or (not remaining and pending):
                    _write_rows(driver, database, pending, notes, empty)
                    entity_vectors.submit(entity_cpu, entity_vectors.settled_texts(pending, final=not remaining))
                    pending = []
            message_texts = [message_embedding_text(m["text"]) for m in messages]
            message_vectors: list[Future] = []
            budget = DecisionBudget(max_llm_pairs=config.max_llm_pairs, batch_pairs=config.batch_pairs,
                                    max_tokens=config.resolution_max_tokens)
            resolver = EntityResolver(driver, database, models, pool, budget, embedder=entity_vectors)
            resolution = resolver.run(on_submitted=lambda: message_vectors.append(
                cpu.submit(embedder.embed, message_texts)))
            linker = UpdateLinker(driver, database, models, pool, budget)
            updates = linker.run()
            entity_vectors.check()
            store.set_message_embeddings(driver, database, [
                {"id": m["id"], "embedding": v} for m, v in zip(messages, message_vectors[0].result())])
        except BaseException:
            for future in (*extracting, *embedding):
                future.cancel()
            for executor in (cpu, entity_cpu):
                executor.shutdown(wait=False, cancel_futures=True)
            raise
        cpu.shutdown(wait=False)
        entity_cpu.shutdown(wait=False)

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
    repeats = repeats_note([future.result() for future in extracting])  # counted by rows_of
    if repeats:
        notes.append(repeats)
    if empty:
        notes.append(f"empty extractions (reply invalid after one retry): {', '.join(empty)}")
    seconds = time.monotonic() - started
    report = IngestReport(
        chunks=len(chunks), empty_extractions=len(empty),
        entities_by_type=graph["entities_by_type"], relations_by_type=graph["relations_by_type"],
        seconds=seconds, notes=notes,
    )
    return report


@contextlib.contextmanager
def _extraction_pool(workers: int) -> Iterator[ThreadPoolExecutor]:
    """The extraction calls' threads. On Ctrl-C a call in flight is abandoned, not waited out: an
    embedded model's call can take minutes, and the run must end and write its record (the
    agent's and the judge's calls, made on the main thread, are abandoned the same way). After
    any other failure the calls in flight are waited for, so each one paid for is metered."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="beam-ingest")
    interrupted = False
    try:
        yield pool
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)


def message_rows(documents: Sequence[Document]) -> list[CypherRow]:
    """Each message once, in conversation order, as ingest writes it (``store.write_messages``):
    id, role, text, order, session, and its standing-rule cue (``message_cues``)."""
    from .message_cues import message_cue

    messages: list[CypherRow] = []
    seen: set[int] = set()
    for document in documents:
        for message in document.messages:
            if message.id in seen:
                continue
            seen.add(message.id)
            messages.append({"id": message.id, "role": message.role, "text": message.text,
                             "order": len(messages), "session": document.session_number,
                             "cue": message_cue(message.text, message.role)})
    return messages


def _write_structure(driver: Driver, database: str, documents: list[Document], chunks: list[Chunk],
                     messages: list[CypherRow]) -> None:
    """Sessions, messages (embedded later, while extraction runs) and chunks."""
    from . import store

    sessions: dict[int, str | None] = {}
    for document in documents:
        sessions.setdefault(document.session_number,
                            document.session_date.isoformat() if document.session_date else None)
    store.write_sessions(driver, database, [{"number": n, "date": d} for n, d in sorted(sessions.items())])
    store.write_messages(driver, database, messages)
    store.write_chunks(driver, database, [
        {"id": c.id, "index": c.index, "session": c.session_number, "message_ids": c.message_ids,
         "tokens": c.tokens, "document": c.document}
        for c in chunks
    ])


@dataclass
class _ChunkRows:
    """One chunk's extraction as graph rows, its statements already embedded."""

    extracted: Any  # extraction.ChunkExtraction
    entities: list[CypherRow]
    statements: list[CypherRow]


def _chunk_rows(extractions: list[Any], embedder: Any, rows_of: Callable) -> list[_ChunkRows]:
    """Rows of several chunks' replies, their statements embedded in one call."""
    out = [_ChunkRows(e, *rows_of(e)) if not e.empty else _ChunkRows(e, [], []) for e in extractions]
    statements = [row for rows in out for row in rows.statements]
    if statements:
        vectors = embedder.embed([_embed_text(s["text"]) for s in statements])
        for row, vector in zip(statements, vectors):
            row["embedding"] = vector
    return out


class _EntityVectors:
    """Entity vectors made while extraction runs, so that resolution finds them ready.

    Resolution embeds an entity as the graph holds it once every chunk is written: the name of
    its first mention in chunk order, and the first non-empty description (``store.write_entities``).
    Rows are written in chunk order, so the moment an entity has a description its text is
    settled (after the last write, every text is). Settled texts are embedded on their own
    thread, so statement embedding never queues behind them. Resolution looks vectors up by text
    (the embedder's vector depends on the text alone), waits for texts in flight, and embeds a
    text that differs from the forecast itself.
    """

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.name = embedder.name
        self.dimensions = embedder.dimensions
        self._texts: dict[str, tuple[str, str]] = {}  # entity id -> (name, description) as written
        self._in_flight: dict[str, Future] = {}  # text -> the job embedding it
        self._jobs: list[Future] = []
        self._vectors: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def settled_texts(self, written: list[_ChunkRows], final: bool = False) -> list[str]:
        from .resolution import entity_embedding_text

        touched: dict[str, None] = {}  # only these can have changed text since the last call
        for rows in written:  # in chunk order, as they were written
            if rows.extracted.empty:
                continue
            for row in rows.entities:
                name, summary = self._texts.get(row["id"], (row["name"], ""))
                self._texts[row["id"]] = (name, summary or row.get("summary") or "")
                touched[row["id"]] = None
        ids = self._texts if final else touched
        texts = (entity_embedding_text({"name": name, "summary": summary})
                 for name, summary in (self._texts[i] for i in ids) if summary or final)
        return [t for t in dict.fromkeys(texts) if t not in self._in_flight]

    def submit(self, executor: ThreadPoolExecutor, texts: list[str]) -> None:
        if not texts:
            return
        job = executor.submit(self._embed_now, texts)
        self._jobs.append(job)
        for text in texts:
            self._in_flight[text] = job

    def _embed_now(self, texts: list[str]) -> None:
        vectors = self.embedder.embed(texts)
        with self._lock:
            self._vectors.update(zip(texts, vectors))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        for job in {self._in_flight[t] for t in texts if t in self._in_flight}:
            job.result()  # an embedding error surfaces here
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self._embed_now(missing)
        with self._lock:
            return [self._vectors[t] for t in texts]

    def check(self) -> None:
        """Raise what a job no one waited for raised."""
        for job in self._jobs:
            job.result()


def _write_rows(driver: Driver, database: str, done: list[_ChunkRows], notes: list[str], empty: list[str]) -> None:
    from . import store

    entity_rows: list[CypherRow] = []
    statement_rows: list[CypherRow] = []
    for rows in done:  # in chunk order
        if rows.extracted.empty:
            empty.append(rows.extracted.chunk.id)
            continue
        entity_rows.extend(rows.entities)
        statement_rows.extend(rows.statements)
        for note in rows.extracted.notes:
            if note not in notes:
                notes.append(note)
    store.write_entities(driver, database, entity_rows)
    store.write_statements(driver, database, statement_rows)

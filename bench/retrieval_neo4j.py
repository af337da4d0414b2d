"""The Neo4j pass of bench/retrieval.py: the agent's own search code on a real graph.

Per conversation: sessions and messages written as ingest writes them (``message_rows``, with
their standing-rule cues, through ``store``), vectors made as ingest makes them (the first
MESSAGE_EMBED_WORDS words), one local Neo4j, the database cleared between conversations. Per
question: ``search.hybrid_search`` (the ``hybrid_search`` tool's code) at limit max(KS) under
each method of NEO4J_METHODS, and the Lucene full-text list at depth 100 (the lexical side the
offline methods fuse). The lists are written to the bench cache so that tuning runs
(``--reuse-neo4j``) need no Neo4j.

``before`` is the search before issue 27 (``search.PLAIN_POLICY``); ``+ordering``, ``+summary``
and ``+rules`` each add one question-aware step to it alone; ``product`` is today's default
(``search.SearchPolicy()``), what the built-in agent's search runs.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from typing import Any

from retrieval_data import KS, Conversation
from retrieval_rank import VectorCache, cache_dir, head

from pytest_beam.memory import search, store
from pytest_beam.memory.graph_schema import install_schema
from pytest_beam.memory.ingest import message_rows
from pytest_beam.services.access import run_write

# "hybrid" is the default before the user-turn prior; "before" the default before issue 27;
# "product" is memory/search.py's own default path today, measured through the real Neo4j indexes.
POLICIES: dict[str, search.SearchPolicy] = {
    "before": search.PLAIN_POLICY,
    "+ordering": replace(search.PLAIN_POLICY, ordering=True),
    "+summary": replace(search.PLAIN_POLICY, summary=True),
    "+rules": replace(search.PLAIN_POLICY, rule_weight=search.RULE_WEIGHT),
    "product": search.SearchPolicy(),
}
NEO4J_METHODS = ("hybrid", "fulltext", "vector", *POLICIES)


class QueryEmbedder:
    """The product's embedder as search.py calls it, answering from the bench's vector cache."""

    def __init__(self, cache: VectorCache) -> None:
        self.cache = cache
        self.dimensions = int(cache.embed(["dimension probe"]).shape[1])

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [v.tolist() for v in self.cache.embed(list(texts), "query")]


def lists_path(cache: VectorCache, words: int) -> Any:
    return cache_dir() / f"neo4j-lists-v27-{cache.path.stem}-w{words}.json"  # v27: stripped, policies


def clear_database(driver: Any, database: str) -> None:
    """Delete every node and relationship of the database, in batches (between conversations)."""
    while True:
        records = run_write(driver, database, "MATCH (n) WITH n LIMIT 5000 DETACH DELETE n RETURN count(*) AS c")
        if records[0]["c"] == 0:
            return


def _load(driver: Any, database: str, conv: Conversation, cache: VectorCache, words: int) -> None:
    clear_database(driver, database)
    dims = int(cache.embed(["dimension probe"]).shape[1])
    install_schema(driver, database, dims)
    rows = message_rows(list(conv.documents))
    vectors = cache.embed([head(r["text"], words) for r in rows])
    store.write_sessions(driver, database, [
        {"number": d.session_number, "date": d.session_date.isoformat() if d.session_date else None}
        for d in conv.documents])
    store.write_messages(driver, database, rows)
    store.set_message_embeddings(driver, database, [{"id": r["id"], "embedding": v.tolist()}
                                                    for r, v in zip(rows, vectors)])
    run_write(driver, database, "CALL db.awaitIndexes(300)")


def _ids(hits: list[search.SearchHit]) -> list[int]:
    return [mid for h in hits for mid in h.message_ids]


def neo4j_lists(convs: list[Conversation], cache: VectorCache, words: int,
                reuse: bool) -> dict[str, dict[str, list[int]]]:
    """{question id: {hybrid, fulltext, vector: top max(KS) ids; lucene: depth-100 ids}}."""
    path = lists_path(cache, words)
    stored: dict[str, dict[str, list[int]]] = json.loads(path.read_text()) if path.exists() else {}
    wanted = [q.id for c in convs for q in c.questions]
    if reuse and all(qid in stored and set(NEO4J_METHODS) <= set(stored[qid]) for qid in wanted):
        return stored
    if reuse:
        print("  --reuse-neo4j: some questions have no stored lists; running Neo4j", file=sys.stderr)
    from pytest_beam.services import open_driver, select_provider

    service = select_provider("local").create("bench-retrieval")
    conn = service.start()
    driver = open_driver(conn, notifications_min_severity="OFF")
    embedder = QueryEmbedder(cache)
    try:
        for conv in convs:
            t0 = time.monotonic()
            _load(driver, conn.database, conv, cache, words)
            for q in conv.questions:
                row = {}
                for method in NEO4J_METHODS:
                    options: dict[str, Any] = {"policy": POLICIES.get(method, search.PLAIN_POLICY)}
                    if method == "hybrid":
                        options["user_weight"] = 1.0
                    row[method] = _ids(search.hybrid_search(
                        driver, conn.database, q.question, embedder, limit=max(KS), kind="messages",
                        method="hybrid" if method in POLICIES else method, **options))
                row["lucene"] = _ids(search.fulltext_search(driver, conn.database, q.question, 100, "messages"))
                stored[q.id] = row
            print(f"  neo4j: conv {conv.id}, {len(conv.messages)} messages, {len(conv.questions)} questions, "
                  f"{time.monotonic() - t0:.0f} s", file=sys.stderr)
    finally:
        driver.close()
        service.stop()
        cache.save()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stored))
    return stored

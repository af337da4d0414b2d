"""The Neo4j pass of bench/retrieval.py: the agent's own search code on a real graph.

Per conversation: Message:Searchable nodes with vectors made as ingest makes them (the first
MESSAGE_EMBED_WORDS words), one local Neo4j, the database cleared between conversations. Per
question: ``search.hybrid_search`` (the ``hybrid_search`` tool's code) with method hybrid,
fulltext and vector at limit max(KS), and the Lucene full-text list at depth 100 (the lexical
side the offline methods fuse). The lists are written to the bench cache so that tuning runs
(``--reuse-neo4j``) need no Neo4j.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from pytest_beam.memory import search
from pytest_beam.memory.graph_schema import install_schema
from pytest_beam.services.access import run_write

from retrieval_data import KS, Conversation
from retrieval_rank import VectorCache, cache_dir, head

# "hybrid" is the previous default (no user-turn prior); "product" is memory/search.py's own
# default path today, measured through the real Neo4j indexes.
NEO4J_METHODS = ("hybrid", "fulltext", "vector", "product")


def lists_path(cache: VectorCache, words: int) -> Any:
    return cache_dir() / f"neo4j-lists-{cache.path.stem}-w{words}.json"


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
    vectors = cache.embed([head(m.text, words) for m in conv.messages])
    sessions = [{"number": d.session_number, "date": d.session_date} for d in conv.documents]
    rows = [{"id": m.id, "role": m.role, "text": m.text, "session": m.session, "embedding": v.tolist()}
            for m, v in zip(conv.messages, vectors)]
    run_write(driver, database, "UNWIND $rows AS r MERGE (:Session {number: r.number, date: r.date})",
              {"rows": sessions})
    for start in range(0, len(rows), 200):
        run_write(
            driver, database,
            """
            UNWIND $rows AS r
            MATCH (s:Session {number: r.session})
            CREATE (m:Message:Searchable {id: r.id, role: r.role, text: r.text, order: r.id,
                                          session: r.session, embedding: r.embedding})
            CREATE (m)-[:IN_SESSION]->(s)
            """, {"rows": rows[start:start + 200]})
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
    try:
        for conv in convs:
            t0 = time.monotonic()
            _load(driver, conn.database, conv, cache, words)
            for q in conv.questions:
                vec = cache.embed([q.question], "query")[0].tolist()
                row = {}
                for method in NEO4J_METHODS:
                    prior = {"user_weight": 1.0} if method == "hybrid" else {}
                    row[method] = _ids(search.hybrid_search(
                        driver, conn.database, q.question, None, limit=max(KS), kind="messages",
                        method="hybrid" if method == "product" else method, embedding=vec, **prior))
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

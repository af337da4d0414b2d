"""Retrieval benchmark of the agent's hybrid search, with no chat model at all.

For the 90 non-abstention questions of the full set (conversations 1, 4, 6, 13, 17), the question
text is the query and every message of its conversation is the corpus (Message:Searchable nodes
with embeddings, in a real Neo4j: one local service, the database cleared between
conversations). It measures the recall of the question's source message ids in the top k hits,
k = 5, 10, 20, for hybrid search (RRF of both), full-text only and vector only, in one run, with
the same code the agent's ``hybrid_search`` tool runs (pytest_beam/memory/search.py); and, on the
same questions without Neo4j, the ``bm25`` and ``dense`` baseline systems' own retrieval
(pytest_beam/systems).

Message vectors: by default (``--embed ingest``) exactly as ingest makes them, from
``message_embedding_text`` (the first MESSAGE_EMBED_WORDS words); ``--message-words N`` tries
another cut (0: the whole message, which the local model still cuts at 256 word pieces).
``--embed mean`` instead embeds windows of ``--window-words`` words (at most ``--max-windows``)
and takes the normalised mean; ``--embed first`` embeds only the first window.

Tuning: ``--grid`` also prints recall@10 of the fusion over a grid of RRF constants and
per-method candidate depths, computed offline from the same two ranked lists (depth 100), so
the defaults in search.py can be chosen on evidence. (Tuning on the set one reports on is
optimistic; the grid is printed so a reader can see how much it matters.)

    .venv/bin/python bench/retrieval.py                # BEAM_DATA defaults to ../shared/beam
    .venv/bin/python bench/retrieval.py --grid
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_beam.data.sets import load_set  # noqa: E402
from pytest_beam.memory import search  # noqa: E402
from pytest_beam.memory.graph_schema import install_schema  # noqa: E402
from pytest_beam.services.access import run_write  # noqa: E402

KS = (5, 10, 20)
METHODS = ("hybrid", "fulltext", "vector")


def windows(text: str, words: int, max_windows: int) -> list[str]:
    tokens = text.split()
    if not tokens:
        return [text]
    return [" ".join(tokens[i:i + words]) for i in range(0, len(tokens), words)][:max_windows]


def embed_messages(embedder: Any, texts: list[str], mode: str, words: int, max_windows: int) -> list[list[float]]:
    if mode == "ingest":
        from pytest_beam.memory.ingest import message_embedding_text
        return embedder.embed([message_embedding_text(t, words) for t in texts])
    pieces: list[str] = []
    owner: list[int] = []
    for i, text in enumerate(texts):
        parts = windows(text, words, 1 if mode == "first" else max_windows)
        pieces.extend(parts)
        owner.extend([i] * len(parts))
    vectors = embedder.embed(pieces)
    dim = len(vectors[0])
    sums = [[0.0] * dim for _ in texts]
    for i, vec in zip(owner, vectors):
        row = sums[i]
        for j, x in enumerate(vec):
            row[j] += x
    out = []
    for row in sums:
        norm = math.sqrt(sum(x * x for x in row)) or 1.0
        out.append([x / norm for x in row])
    return out


def _embedding_label(args: argparse.Namespace) -> str:
    if args.embed == "ingest":
        from pytest_beam.memory.ingest import MESSAGE_EMBED_WORDS
        words = MESSAGE_EMBED_WORDS if args.message_words is None else args.message_words
        return f"as ingest, the first {words} words" if words > 0 else "as ingest, whole messages"
    return f"{args.embed} of {args.window_words}-word windows, max {args.max_windows}"


def load_conversation(driver: Any, database: str, documents: Any, embedder: Any, args: argparse.Namespace) -> int:
    _clear(driver, database)
    install_schema(driver, database, embedder.dimensions)
    rows = []
    sessions = []
    for doc in documents:
        sessions.append({"number": doc.session_number, "date": doc.session_date})
        for m in doc.messages:
            rows.append({"id": m.id, "role": m.role, "text": m.text, "session": doc.session_number})
    words = args.message_words if args.embed == "ingest" else args.window_words
    vectors = embed_messages(embedder, [r["text"] for r in rows], args.embed, words, args.max_windows)
    for row, vec in zip(rows, vectors):
        row["embedding"] = vec
        row["order"] = row["id"]
    run_write(driver, database, "UNWIND $rows AS r MERGE (:Session {number: r.number, date: r.date})",
              {"rows": sessions})
    for start in range(0, len(rows), 200):
        run_write(
            driver, database,
            """
            UNWIND $rows AS r
            MATCH (s:Session {number: r.session})
            CREATE (m:Message:Searchable {id: r.id, role: r.role, text: r.text, order: r.order,
                                          session: r.session, embedding: r.embedding})
            CREATE (m)-[:IN_SESSION]->(s)
            """, {"rows": rows[start:start + 200]})
    run_write(driver, database, "CALL db.awaitIndexes(300)")
    return len(rows)


def _clear(driver: Any, database: str) -> None:
    while True:
        records = run_write(driver, database, "MATCH (n) WITH n LIMIT 5000 DETACH DELETE n RETURN count(*) AS c")
        if records[0]["c"] == 0:
            return


def recall(sources: set[int], ranked_ids: list[int], k: int) -> float:
    top: list[int] = []
    for mid in ranked_ids:
        if mid not in top:
            top.append(mid)
        if len(top) == k:
            break
    return len(sources & set(top)) / len(sources)


def hit_ids(hits: list[search.SearchHit]) -> list[int]:
    return [mid for h in hits for mid in h.message_ids]


def _mhit(mid: int) -> search.SearchHit:
    return search.SearchHit(kind="message", id=mid, text="", session=None, date=None, message_ids=[mid])


def print_grid(grid_lists: list[tuple[set[int], list[search.SearchHit], list[search.SearchHit]]]) -> None:
    """Hybrid recall@10 over RRF constants, candidate depths and the vector list's weight."""
    depths = (10, 20, 40, 60, 100)
    for weight in (1.0, 1.5, 2.0, 3.0):
        print(f"\nTuning grid, hybrid recall@10, vector weight {weight:g} "
              "(rows: RRF constant; columns: candidate depth per method)")
        print("| rrf_k | " + " | ".join(f"d={d:<3}" for d in depths) + " |")
        for rrf_k in (1, 5, 10, 20, 30, 60, 100):
            cells = []
            for depth in depths:
                values = []
                for sources, ft, vs in grid_lists:
                    fused = search.rrf_fuse({"fulltext": ft[:depth], "vector": vs[:depth]}, rrf_k=rrf_k,
                                            weights={"fulltext": 1.0, "vector": weight})
                    values.append(recall(sources, hit_ids(fused), 10))
                cells.append(f"{sum(values) / len(values):.3f}")
            print(f"| {rrf_k:>5} | " + " | ".join(cells) + " |")


# --- the bm25 and dense baselines (pytest_beam/systems), on the same questions ------------------

BASELINE_METHODS = ("bm25", "dense")


def baseline_recalls(bench_set: Any, questions: list[Any], wanted: list[str],
                     embedder: Any) -> dict[str, dict[int, list[float]]]:
    """Recall@k of the bm25 and dense systems' own retrieval, no Neo4j: their top max(KS) per
    question, ranked by the code they answer with (dense embeds messages as ingest does, so it
    ignores --embed and --message-words)."""
    from types import SimpleNamespace

    from pytest_beam.systems.bm25 import BM25System
    from pytest_beam.systems.dense import DenseSystem

    context = SimpleNamespace(settings=None, models=None)
    out: dict[str, dict[int, list[float]]] = {m: {k: [] for k in KS} for m in BASELINE_METHODS}
    for cid in wanted:
        documents = list(bench_set.documents[cid])
        systems = {"bm25": BM25System(context, k=max(KS)), "dense": DenseSystem(context, k=max(KS), embedder=embedder)}
        for system in systems.values():
            system.ingest(documents)
        for q in (q for q in questions if q.conversation_id == cid):
            for method, system in systems.items():
                ids = [m.id for m, _ in system.retrieve(q.question)]
                for k in KS:
                    out[method][k].append(recall(set(q.source_message_ids), ids, k))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA", str(REPO.parent / "shared" / "beam")))
    parser.add_argument("--embed", choices=("ingest", "mean", "first"), default="ingest")
    parser.add_argument("--message-words", type=int, default=None,
                        help="--embed ingest: words of a message to embed (default: what ingest uses)")
    parser.add_argument("--window-words", type=int, default=150)
    parser.add_argument("--max-windows", type=int, default=8)
    parser.add_argument("--embedder", default="local",
                        help="local (int8 MatMuls, the default) or local-export (the export as shipped)")
    parser.add_argument("--grid", action="store_true", help="print the RRF tuning grid too")
    parser.add_argument("--dump", default="", help="write the ranked lists (depth 100) to this JSON file")
    parser.add_argument("--from-dump", default="", help="only print the tuning grid from a --dump file")
    parser.add_argument("--conversations", default="", help="comma-separated subset (default: all five)")
    args = parser.parse_args()

    from pytest_beam.memory.embeddings import make_embedder
    from pytest_beam.services import open_driver, select_provider

    if args.from_dump:
        data = json.loads(Path(args.from_dump).read_text())
        print_grid([(set(d["sources"]), [_mhit(i) for i in d["fulltext"]], [_mhit(i) for i in d["vector"]])
                    for d in data])
        return 0
    started = time.monotonic()
    bench_set = load_set("full", Path(args.data))
    questions = [q for q in bench_set.questions if q.ability != "abstention" and q.source_message_ids]
    wanted = [c for c in args.conversations.split(",") if c] or sorted(bench_set.documents, key=int)
    embedder = make_embedder(args.embedder)
    results: dict[str, dict[int, list[float]]] = {m: {k: [] for k in KS} for m in METHODS}
    grid_lists: list[tuple[set[int], list[search.SearchHit], list[search.SearchHit]]] = []
    per_conv: list[str] = []

    service = select_provider("local").create("bench-retrieval")
    conn = service.start()
    driver = open_driver(conn, notifications_min_severity="OFF")
    try:
        for cid in wanted:
            t0 = time.monotonic()
            n = load_conversation(driver, conn.database, bench_set.documents[cid], embedder, args)
            conv_questions = [q for q in questions if q.conversation_id == cid]
            for q in conv_questions:
                sources = set(q.source_message_ids)
                vec = embedder.embed([q.question])[0]
                for method in METHODS:
                    hits = search.hybrid_search(driver, conn.database, q.question, None, limit=max(KS),
                                                kind="messages", method=method, embedding=vec)
                    ids = hit_ids(hits)
                    for k in KS:
                        results[method][k].append(recall(sources, ids, k))
                if args.grid or args.dump:
                    ft = search.fulltext_search(driver, conn.database, q.question, 100, "messages")
                    vs = search.vector_search_by_embedding(driver, conn.database, vec, 100, "messages")
                    grid_lists.append((sources, ft, vs))
            per_conv.append(f"conv {cid}: {n} messages, {len(conv_questions)} questions, "
                            f"{time.monotonic() - t0:.0f} s")
    finally:
        driver.close()
        service.stop()

    count = len(results["hybrid"][KS[0]])
    print(f"\nRecall of source message ids over {count} non-abstention questions "
          f"(embedder {embedder.name}, {_embedding_label(args)}; "
          f"RRF k={search.DEFAULT_RRF_K}, weights {search.DEFAULT_WEIGHTS}, "
          f"depth=max({search.MIN_DEPTH}, {search.DEFAULT_DEPTH_FACTOR}*limit), limit {max(KS)})\n")
    print("| method    | " + " | ".join(f"R@{k:<3}" for k in KS) + " |")
    print("|-----------|" + "|".join("-------" for _ in KS) + "|")
    results.update(baseline_recalls(bench_set, questions, wanted, embedder))
    for method in (*METHODS, *BASELINE_METHODS):
        cells = " | ".join(f"{sum(v) / len(v):.3f}" for v in (results[method][k] for k in KS))
        print(f"| {method:<9} | {cells} |")
    print()
    for line in per_conv:
        print("  " + line)
    if args.dump:
        Path(args.dump).write_text(json.dumps([
            {"sources": sorted(s), "fulltext": hit_ids(ft), "vector": hit_ids(vs)} for s, ft, vs in grid_lists]))
    if args.grid and grid_lists:
        print_grid(grid_lists)
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

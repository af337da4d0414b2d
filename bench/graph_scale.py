"""One local Neo4j holding a 1M conversation's graph, against one holding a 100K conversation's.

Each conversation goes through the product's real ingest into its own local Neo4j (the provider
the harness starts per conversation), with the scripted instant extractor of bench/ingest_cost.py
instead of a model. Then, per graph: the service's start time (to the first query), the store's
size on disk, the JVM's RSS, and the latency of the agent's tools called as the agent calls them
for each of the conversation's 20 questions (hybrid_search with the question, the same over
messages only, entity_statements and timeline for each entity the extractor finds in the
question, standing_rules, read_messages of the question's source ids, and one read-only Cypher
count), median and p95 per tool, and the 1M graph's as a ratio of the 100K graph's, both measured
in this run.

    .venv/bin/python bench/graph_scale.py [--data ../shared/beam] [--small 100K:17] [--large 1M:32]
    .venv/bin/python bench/graph_scale.py --smoke [--cache DIR]   (each conversation's first 40 messages)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest_cost import responder, scripted_extraction  # noqa: E402
from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

TOOLS = ("hybrid_search", "hybrid_search messages", "entity_statements", "timeline", "standing_rules",
         "read_messages", "cypher")


def documents_of(data: Path, spec: str, messages: int | None):
    """A conversation's documents (TIER:N), cut to its first ``messages`` messages in smoke mode."""
    from pytest_beam.data.sets import load_set

    tier, cid = spec.split(":", 1)
    bench = load_set("full", data, cid, tier=tier)
    documents = list(bench.documents[cid])
    if messages is not None:
        kept, left = [], messages
        for document in documents:
            if left <= 0:
                break
            kept.append(document.model_copy(update={"messages": document.messages[:left]}))
            left -= len(kept[-1].messages)
        documents = kept
    return documents, [q for q in bench.questions if q.conversation_id == cid]


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(label: str, documents, questions, server_url: str, embedder, work: Path) -> dict:
    from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
    from pytest_beam.memory.ingest import IngestConfig, ingest_documents
    from pytest_beam.memory.tools import ToolBox
    from pytest_beam.services import open_driver, select_provider

    client = ModelClient(EndpointConfig(base_url=server_url, max_retries=0, concurrency=4),
                         RoleModels(agent="bench-agent", extraction="bench-extractor", resolution="bench-resolver"))
    service = select_provider("local", work_dir=work).create(f"bench-scale-{label.replace('/', '-')}")
    t0 = time.monotonic()
    conn = service.start()
    driver = open_driver(conn, notifications_min_severity="OFF")
    try:
        driver.execute_query("RETURN 1", database_=conn.database)
        start_s = time.monotonic() - t0
        rss_empty = service.rss_bytes()
        t1 = time.monotonic()
        report = ingest_documents(driver, conn.database, documents, client, embedder, IngestConfig())
        ingest_s = time.monotonic() - t1
        records, _, _ = driver.execute_query("MATCH (n) RETURN count(n) AS nodes", database_=conn.database)
        nodes = records[0]["nodes"]
        records, _, _ = driver.execute_query("MATCH ()-[r]->() RETURN count(r) AS rels", database_=conn.database)
        rels = records[0]["rels"]
        tools = ToolBox(driver, conn.database, embedder)
        latency: dict[str, list[float]] = {name: [] for name in TOOLS}

        def timed(name: str, tool: str, args: dict) -> None:
            started = time.monotonic()
            result = tools.call(tool, args)
            latency[name].append(time.monotonic() - started)
            if result.is_error:
                raise RuntimeError(f"{tool}({args}) on {label}: {result.text[:300]}")

        for tool, args in (("hybrid_search", {"query": "warm up"}), ("entity_statements", {"name": "warm up"}),
                           ("timeline", {"topic": "warm up"}), ("standing_rules", {}), ("read_messages", {"ids": [0]}),
                           ("cypher", {"query": "RETURN 1 AS one"})):
            tools.call(tool, args)  # each tool's first call (query plans, the embedder) is not timed
        for q in questions:
            timed("hybrid_search", "hybrid_search", {"query": q.question})
            timed("hybrid_search messages", "hybrid_search", {"query": q.question, "kind": "messages"})
            entities = [e["name"] for e in
                        scripted_extraction(f"<excerpt>\n[message 0, user] {q.question}\n</excerpt>")["entities"]]
            for name in entities[:3]:
                timed("entity_statements", "entity_statements", {"name": name})
                timed("timeline", "timeline", {"topic": name})
            timed("standing_rules", "standing_rules", {})
            ids = list(q.source_message_ids[:10]) or [0, 1]
            timed("read_messages", "read_messages", {"ids": ids})
            timed("cypher", "cypher", {"query": "MATCH (m:Message) RETURN count(m) AS messages"})
        store = du(service.data_dir) if service.data_dir else 0
        rss = service.rss_bytes()
    finally:
        driver.close()
        service.stop()
        client.close()
    return {"label": label, "messages": sum(len(d.messages) for d in documents), "chunks": report.chunks,
            "nodes": nodes, "relations": rels, "start_s": start_s, "ingest_s": ingest_s, "store": store,
            "rss_empty": rss_empty, "rss": rss, "latency": latency}


def print_rows(small: dict, large: dict) -> None:
    mb = 1024 * 1024
    print(f"\n{'':<26}{small['label']:>14}{large['label']:>14}{'ratio':>8}")
    for name, key, fmt in (("messages", "messages", "{:,}"), ("chunks", "chunks", "{:,}"), ("nodes", "nodes", "{:,}"),
                           ("relations", "relations", "{:,}"), ("start to first query (s)", "start_s", "{:.1f}"),
                           ("ingest (s, instant model)", "ingest_s", "{:.0f}")):
        print(f"{name:<26}{fmt.format(small[key]):>14}{fmt.format(large[key]):>14}"
              f"{large[key] / small[key] if small[key] else 0:>8.2f}")
    for name, key in (("store on disk (MB)", "store"), ("RSS empty (MB)", "rss_empty"), ("RSS with graph (MB)", "rss")):
        print(f"{name:<26}{small[key] / mb:>14.0f}{large[key] / mb:>14.0f}"
              f"{large[key] / small[key] if small[key] else 0:>8.2f}")
    print("\nagent tool latency (ms): median / p95 over the questions' calls")
    print(f"{'tool':<26}{'calls':>7}{small['label']:>16}{'calls':>7}{large['label']:>16}{'median ratio':>14}")
    for tool in TOOLS:
        a, b = small["latency"][tool], large["latency"][tool]
        if not a or not b:
            continue
        ma, mb_ = statistics.median(a) * 1000, statistics.median(b) * 1000
        print(f"{tool:<26}{len(a):>7}{f'{ma:.1f} / {percentile(a, 0.95) * 1000:.1f}':>16}{len(b):>7}"
              f"{f'{mb_:.1f} / {percentile(b, 0.95) * 1000:.1f}':>16}{mb_ / ma:>14.2f}")
    every_a = [v for values in small["latency"].values() for v in values]
    every_b = [v for values in large["latency"].values() for v in values]
    print(f"{'all tools':<26}{len(every_a):>7}{statistics.median(every_a) * 1000:>16.1f}{len(every_b):>7}"
          f"{statistics.median(every_b) * 1000:>16.1f}{statistics.median(every_b) / statistics.median(every_a):>14.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA") or str(ROOT.parent / "shared" / "beam"))
    parser.add_argument("--small", default="100K:17", help="TIER:N of the baseline conversation")
    parser.add_argument("--large", default="1M:32", help="TIER:N of the large conversation (the largest 1M chat here)")
    parser.add_argument("--messages", type=int, default=None, help="only each conversation's first N messages")
    parser.add_argument("--work", default="/tmp/beam-graph-scale-bench")
    add_smoke_options(parser)
    args = parser.parse_args()
    smoke_defaults(parser, args, messages=40)
    use_cache(args)

    from pytest_beam.memory.embeddings import make_embedder
    from tests.model_server import ScriptedModelServer

    data, work = Path(args.data).resolve(), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    embedder = make_embedder("local")
    results = []
    from pytest_beam.services import select_provider

    warm = select_provider("local", work_dir=work).create("bench-scale-warm-up")
    warm.start()  # the first start of a machine builds the class-data archive: not one of the measured
    warm.stop()
    with ScriptedModelServer(responder=responder) as server:
        for spec in (args.small, args.large):
            documents, questions = documents_of(data, spec, args.messages)
            if args.smoke:
                questions = questions[:4]
            label = spec.replace(":", "/conv")
            print(f"... {label}: {sum(len(d.messages) for d in documents):,} messages, {len(questions)} questions",
                  flush=True)
            results.append(measure(label, documents, questions, server.base_url, embedder, work))
    print_rows(*results)
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

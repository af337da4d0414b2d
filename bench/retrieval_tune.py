"""Tuning grids for bench/retrieval.py's methods, on the dev conversations only.

Reads the Neo4j pass's lists stored by a run of bench/retrieval.py (the Lucene ranking) and the
cached vectors, so it needs no Neo4j; prints mean recall@5/10/20 over the dev questions for each
configuration of a grid. Nothing here looks at the held-out conversations (``--group heldout``
exists only to confirm a configuration after it was chosen).

    .venv/bin/python bench/retrieval_tune.py --grid fusion
    .venv/bin/python bench/retrieval_tune.py --smoke [--cache DIR]   (one session of conversation 1, 4 questions)
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_data import KS, load_conversations, mean_se, recall, smoke_conversations  # noqa: E402
from retrieval_methods import BASE, METHODS, Config, Ranker, corpus_of  # noqa: E402
from retrieval_neo4j import neo4j_lists  # noqa: E402
from retrieval_rank import make_cache, role_boost, session_spread  # noqa: E402
from smoke_options import add_smoke_options, use_cache  # noqa: E402


def grid(name: str, base: Config) -> dict[str, Config]:
    """Named configurations of one grid, each a change of ``base``."""
    out: dict[str, Config] = {"base": base}
    if name == "fusion":
        for k in (1, 3, 5, 10, 20, 60):
            for w in (1.0, 1.5, 2.0, 3.0):
                for depth in (20, 40, 80):
                    out[f"k={k} w={w:g} d={depth}"] = replace(base, rrf_k=k, w_dense=w, depth=depth)
    elif name == "units":
        for unit in ("head:0", "win:100:8", "winmean:100:8", "win:200:4", "winmean:200:4"):
            out[unit] = replace(base, dense=unit)
            out[f"{unit} user x2.5"] = replace(base, dense=unit, user_weight=2.5)
        for unit in ("win:100:8", "win:200:4"):
            for w in (1.0, 2.0):
                out[f"head:50 + {unit} x{w:g}"] = replace(base, extra_dense=unit, w_extra=w)
                out[f"head:50 + {unit} x{w:g} user x2.5"] = replace(base, extra_dense=unit, w_extra=w,
                                                                    user_weight=2.5)
    elif name == "neighbours":
        for rule in ("pair", "user"):
            for first in (False, True):
                out[f"{rule} first={first}"] = replace(base, nbr=rule, nbr_first=first)
    elif name == "lexical":
        for lex in ("lucene", "bm25", "none"):
            for w in (0.5, 1.0, 2.0):
                out[f"{lex} w_lex={w:g}"] = replace(base, lexical=lex, w_lex=w)
    elif name == "user":
        for w in (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0):
            for rule in ("none", "user", "pair"):
                out[f"user x{w:g} nbr={rule}"] = replace(base, user_weight=w, nbr=rule)
    elif name == "e5":
        e5 = "e5-small-q4"
        out["e5 head:50"] = replace(base, embedder=e5)
        out["e5 head:50 user x2.5"] = replace(base, embedder=e5, user_weight=2.5)
        for w in (1.0, 2.0):
            out[f"minilm + e5 head:50 x{w:g}"] = replace(base, extra_dense=f"head:50@{e5}", w_extra=w)
            out[f"minilm + e5 head:50 x{w:g} user x2.5"] = replace(base, extra_dense=f"head:50@{e5}", w_extra=w,
                                                                   user_weight=2.5)
    elif name == "statements":
        for w in (0.5, 1.0, 2.0):
            out[f"statements x{w:g}"] = replace(base, w_stmt=w)
            out[f"statements x{w:g} user x2.5"] = replace(base, w_stmt=w, user_weight=2.5)
    elif name == "feedback":
        for beta in (0.25, 0.5, 1.0):
            for m in (1, 3, 5):
                out[f"feedback x{beta:g} top {m}"] = replace(base, prf=beta, prf_m=m)
    elif name == "methods":
        out.update(METHODS)
    else:
        raise SystemExit(f"unknown grid {name!r}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA", str(REPO.parent / "shared" / "beam")))
    parser.add_argument("--grid", default="fusion")
    parser.add_argument("--group", default="dev", choices=("dev", "heldout"))
    parser.add_argument("--base", default="", help="a METHODS name to vary instead of base-offline")
    parser.add_argument("--spread", default="", help="comma-separated session-spread decays to try")
    parser.add_argument("--user-boost", default="", help="comma-separated user-turn weights to try after fusion")
    add_smoke_options(parser)
    args = parser.parse_args()
    use_cache(args)

    if args.smoke and args.group != "dev":
        raise SystemExit("--smoke runs on the dev group only")
    convs = smoke_conversations(Path(args.data)) if args.smoke else load_conversations(Path(args.data), [args.group])
    caches = {"local": make_cache("local")}
    lists = neo4j_lists(convs, caches["local"], 50, reuse=True)
    base = METHODS[args.base] if args.base else BASE
    configs = grid(args.grid, base)
    boosts = [float(b) for b in args.user_boost.split(",") if b] or [1.0]
    spreads = [float(d) for d in args.spread.split(",") if d]
    scores: dict[str, list[list[float]]] = {}
    for conv in convs:
        ranker = Ranker(corpus_of(conv), caches, conv.documents)
        for q in conv.questions:
            sources = set(q.source_message_ids)
            for name, cfg in configs.items():
                ranked = ranker.rank(cfg, q.question, lists[q.id]["lucene"])
                for boost in boosts:
                    ids = ranked if boost == 1.0 else role_boost(ranker.corpus, ranked, boost, cfg.rrf_k)
                    label = name if boost == 1.0 else f"{name} user x{boost:g}"
                    scores.setdefault(label, []).append([recall(sources, ids, k) for k in KS])
                for decay in spreads:
                    ids = session_spread(ranker.corpus, ranked, decay, cfg.rrf_k)
                    scores.setdefault(f"{name} spread x{decay:g}", []).append([recall(sources, ids, k) for k in KS])
        for cache in caches.values():
            cache.save()
    print(f"{args.group}, grid {args.grid}, base: {base.describe()}")
    print("| config | " + " | ".join(f"R@{k}" for k in KS) + " |")
    print("|---|" + "---|" * len(KS))
    ranked_rows = sorted(scores.items(), key=lambda kv: -sum(r[1] for r in kv[1]))
    for label, rows in ranked_rows:
        cells = []
        for i in range(len(KS)):
            mean, se = mean_se([r[i] for r in rows])
            cells.append(f"{mean:.3f} ± {se:.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What the int8-MatMul copy of the local embedding model costs and how far its vectors move.

Embeds the texts ingest embeds for the five conversations of the full set: each message's head
(as ingest cuts it), and each question (the agent's queries look like them); with the export as
shipped (``local-export``, MatMuls in fp32) and with the default ``local`` (MatMuls in int8), in
one process, one thread each (so CPU seconds are comparable), in the same order. It prints CPU
seconds and texts per CPU second for both, the ratio, and the cosine of each text's two vectors.
How much the change moves retrieval: ``bench/retrieval.py --embedder local-export`` against
``bench/retrieval.py``.

    .venv/bin/python bench/embeddings.py [--data ../shared/beam] [--repeat 2]
    .venv/bin/python bench/embeddings.py --smoke [--cache DIR]   (conversation 1 only, one timing)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

from pytest_beam.data.sets import load_set  # noqa: E402
from pytest_beam.memory import embeddings  # noqa: E402
from pytest_beam.memory.ingest import message_embedding_text  # noqa: E402


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA", str(REPO.parent / "shared" / "beam")))
    parser.add_argument("--repeat", type=int, default=2, help="best of N timings per model")
    add_smoke_options(parser)
    args = parser.parse_args()
    smoke_defaults(parser, args, repeat=1)
    use_cache(args)
    # smoke: one conversation of the full set (the lite set's 5 texts take no measurable CPU time)
    bench_set = load_set("full", Path(args.data), conversations="1" if args.smoke else None)
    groups = {
        "message heads": [message_embedding_text(m.text) for docs in bench_set.documents.values()
                          for d in docs for m in d.messages],
        "questions": [q.question for q in bench_set.questions],
    }
    vectors: dict[str, dict[str, list[list[float]]]] = {}
    seconds: dict[str, dict[str, float]] = {}
    for spec in ("local-export", "local"):
        embedder = embeddings.LocalEmbedder(quantized=spec == "local", threads=1)  # each with its default batch size
        embedder.embed(["warm up"])
        vectors[spec], seconds[spec] = {}, {}
        for group, texts in groups.items():
            best = float("inf")
            for _ in range(max(1, args.repeat)):
                started = cpu_seconds()
                vectors[spec][group] = embedder.embed(texts)
                best = min(best, cpu_seconds() - started)
            seconds[spec][group] = best
        print(f"{spec:>13}: {embedder.name}")
    print(f"\n{'texts':<15}{'n':>6}{'export cpu s':>14}{'int8 cpu s':>12}{'ratio':>8}"
          f"{'export/s':>10}{'int8/s':>9}{'cos mean':>10}{'cos p1':>8}{'cos min':>9}")
    for group, texts in groups.items():
        a, b = seconds["local-export"][group], seconds["local"][group]
        cos = sorted(embeddings.cosine(x, y) for x, y in zip(vectors["local-export"][group], vectors["local"][group]))
        print(f"{group:<15}{len(texts):>6}{a:>14.2f}{b:>12.2f}{a / b:>7.2f}x{len(texts) / a:>10.0f}"
              f"{len(texts) / b:>9.0f}{sum(cos) / len(cos):>10.4f}{cos[len(cos) // 100]:>8.4f}{cos[0]:>9.4f}")
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"\n({time.monotonic() - started:.0f} s)")
    raise SystemExit(code)

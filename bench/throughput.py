"""How busy a run keeps an endpoint that takes C requests at once, each answered after L seconds.

The real plugin runs the full set (`--beam-mode=full`, 5 conversations, 100 questions; `--mode
complete` for all 20) with `-n 5`, real local Neo4j services and the real embedder, against a
scripted model server (bench/overhead.py's realistic extractions, agent steps and judge replies)
that serves at most C requests at once, each after L seconds, and answers every request beyond C
with 429 and `Retry-After: 1`, as a rate-limited endpoint does. In one run of this script, side by
side:

- sequential: one question of a conversation at a time (`--beam-question-concurrency=1`), the way
  questions ran before they were answered concurrently;
- concurrent: the default, several questions of a conversation at once once it is ingested;
- shards: the concurrent run split into N shards (`--beam-shard=K/N`) run side by side, as N
  machines would (here they share these cores).

For each it prints the wall time, the endpoint's utilization (request-seconds it served over
C x wall), the ideal wall time (calls served x L / C: the endpoint busy every moment), the 429s it
answered, where the adaptive limits settled, and the CPU the run's processes used by kind, with
how long the machine's cores were saturated: where utilization falls short because the harness
waits on its own CPU, those lines say so.

    .venv/bin/python bench/throughput.py [--capacity 16] [--latency 1] [--workers 5] [--shards 3]
                                         [--concurrency 4] [--question-concurrency 4]
                                         [--mode full|complete] [--system graphrag]
    .venv/bin/python bench/throughput.py --smoke [--cache DIR]   (bm25 on two conversations' abstention
        questions, C 4, L 0.05 s, -n 1, 2 shards: the code path, not a measurement)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from overhead import Responder, TreeCPU  # noqa: E402
from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

from tests.model_server import Reply, ScriptedModelServer  # noqa: E402


class Capacity:
    """At most ``capacity`` requests in service at once, each held ``latency`` seconds; beyond that, 429."""

    def __init__(self, inner, capacity: int, latency: float) -> None:
        self.inner, self.capacity, self.latency = inner, capacity, latency
        self.lock = threading.Lock()
        self.in_service = 0
        self.served = 0
        self.refused = 0
        self.busy = 0.0  # request-seconds spent serving

    def __call__(self, body):
        with self.lock:
            if self.in_service >= self.capacity:
                self.refused += 1
                return Reply.fail(429, "over capacity", retry_after=1)
            self.in_service += 1
        started = time.monotonic()
        try:
            time.sleep(self.latency)
            return self.inner(body)
        finally:
            with self.lock:
                self.in_service -= 1
                self.served += 1
                self.busy += time.monotonic() - started

    def reset(self) -> None:
        with self.lock:
            self.served, self.refused, self.busy = 0, 0, 0.0


@dataclass
class Measured:
    name: str
    wall: float = 0.0
    served: int = 0
    refused: int = 0
    busy: float = 0.0
    questions: int = 0
    errors: int = 0  # questions without a score: a run that lost them is not faster, it did less
    limits: list[str] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    saturated: float = 0.0

    def utilization(self, capacity: int) -> float:
        return self.busy / (capacity * self.wall) if self.wall else 0.0

    def ideal(self, capacity: int, latency: float) -> float:
        return self.served * latency / capacity


def command(args: argparse.Namespace, url: str, results: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            f"--beam-mode={args.mode}", f"--beam-system={args.system}", f"--beam-data={args.data}",
            f"--beam-base-url={url}", "--beam-model=scripted", "--beam-neo4j=local", "--beam-cache=off",
            f"--beam-results={results}", "--beam-snapshot=off", "--beam-pass-score=0", "--beam-max-calls=1000000",
            "--beam-max-tokens=10000000000", f"--beam-concurrency={args.concurrency}", *args.select, *extra]


def measure(name: str, commands: list[list[str]], project: Path, model: Capacity) -> Measured:
    """Run the commands side by side (one, or one per shard) and read what the endpoint served."""
    model.reset()
    out = Measured(name)
    with TreeCPU() as tree:
        started = time.monotonic()
        procs = []
        for cmd in commands:
            procs.append(subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
            tree.root = procs[0].pid if len(procs) == 1 else os.getpid()
        outputs = [p.communicate()[0] for p in procs]
        out.wall = time.monotonic() - started
        out.cpu, out.saturated = tree.by_kind(), tree.saturated_seconds(started)
    for proc, text in zip(procs, outputs):
        if proc.returncode not in (0, 1):
            print(text[-3000:])
            raise SystemExit(f"{name}: a run failed ({proc.returncode})")
    out.served, out.refused, out.busy = model.served, model.refused, model.busy
    for cmd in commands:
        results = Path(next(a.split("=", 1)[1] for a in cmd if a.startswith("--beam-results=")))
        record = json.loads(next(results.glob("*/record.json")).read_text())
        out.questions += len(record["questions"])
        out.errors += sum(q["outcome"] == "error" for q in record["questions"])
        for row in record.get("endpoint_limits", []):
            out.limits.append(f"{sorted(row['settled'].values())} of {row['ceiling']}, lowest {row['lowest']}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA", str(ROOT.parent / "shared" / "beam")))
    parser.add_argument("--capacity", type=int, default=16, help="C: requests the endpoint serves at once")
    parser.add_argument("--latency", type=float, default=1.0, help="L: seconds each request takes")
    parser.add_argument("--workers", type=int, default=5, help="-n of each run")
    parser.add_argument("--shards", type=int, default=3, help="N: shards run side by side (1: none)")
    parser.add_argument("--concurrency", type=int, default=4, help="--beam-concurrency: the ceiling per process")
    parser.add_argument("--question-concurrency", type=int, default=4,
                        help="--beam-question-concurrency of the concurrent runs and the shards")
    parser.add_argument("--mode", default="full", choices=("full", "complete"))
    parser.add_argument("--system", default="graphrag")
    parser.add_argument("--work", default=tempfile.gettempdir())
    add_smoke_options(parser)
    args = parser.parse_args(argv)
    smoke_defaults(parser, args, capacity=4, latency=0.05, workers=1, shards=2, system="bm25")
    use_cache(args)
    args.select = ["--beam-conversations=1,4", "-k", "abstention"] if args.smoke else []
    project = Path(tempfile.mkdtemp(prefix="beam-throughput-", dir=args.work))
    (project / "pytest.ini").write_text("[pytest]\n")
    model = Capacity(Responder(), args.capacity, args.latency)
    print(f"endpoint: {args.capacity} requests at once, {args.latency:g} s each, 429 beyond; {args.mode} set, "
          f"{args.system}, -n {args.workers}, --beam-concurrency {args.concurrency}, --beam-question-concurrency "
          f"{args.question_concurrency} (1 in the sequential run); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    runs: list[Measured] = []
    with ScriptedModelServer(responder=model) as server:
        url = server.base_url
        n = ["-n", str(args.workers)] if args.workers > 1 else []
        plan = [("sequential", [command(args, url, project / "sequential", "--beam-question-concurrency=1", *n)]),
                ("concurrent", [command(args, url, project / "concurrent", *n)])]
        if args.shards > 1:
            width = -(-args.workers // args.shards)  # the workers shared out, rounded up: each shard's machine
            per_shard = ["-n", str(width)] if width > 1 else []
            plan.append((f"{args.shards} shards", [
                command(args, url, project / f"shard{k}", f"--beam-shard={k}/{args.shards}", *per_shard)
                for k in range(1, args.shards + 1)]))
        for name, commands in plan:
            runs.append(measure(name, commands, project, model))
            r = runs[-1]
            print(f"{name}: {r.wall:.1f} s, {r.questions} questions ({r.errors} errors), {r.served} requests served, "
                  f"{r.refused} answered 429; limits settled at {'; '.join(r.limits) or '-'}", flush=True)
    c, latency = args.capacity, args.latency
    print(f"\n{'run':<12}{'wall s':>9}{'ideal s':>9}{'utilization':>13}{'served':>8}{'429s':>7}"
          f"{'CPU s':>8}{'cores saturated s':>19}")
    for r in runs:
        print(f"{r.name:<12}{r.wall:>9.1f}{r.ideal(c, latency):>9.1f}{r.utilization(c):>13.2f}{r.served:>8}"
              f"{r.refused:>7}{sum(r.cpu.values()):>8.1f}{r.saturated:>19.1f}")
    base = runs[0]
    for r in runs:
        if r.errors:
            print(f"WARNING: {r.name} left {r.errors} of {r.questions} questions without a score: its times are not "
                  "comparable")
    for r in runs[1:]:
        print(f"{r.name} against sequential: {base.wall / r.wall:.2f}x faster, utilization "
              f"{r.utilization(c):.2f} against {base.utilization(c):.2f}")
    for r in runs:
        kinds = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(r.cpu.items(), key=lambda kv: -kv[1]))
        print(f"CPU of {r.name}: {kinds or '-'}; the cores were saturated {r.saturated:.0f} of {r.wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

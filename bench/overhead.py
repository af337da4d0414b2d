"""The harness's own overhead on the full set, and how parallelism pays off against a slow model.

Runs the real plugin (`pytest --beam-mode=full`, 5 conversations, 100 questions, real local
Neo4j services, the real local embedder) against a scripted model server that answers
realistic extractions (bench/ingest_cost.py's), agent steps and judge replies after a simulated
latency. For each latency and worker count it prints wall time, model calls and tokens per
phase, and the harness's own time per question; then one conversation's ingest at extraction
concurrency 1 and 8.

    .venv/bin/python bench/overhead.py [--latency 0,0.2] [--workers 1,5] [--ingest-concurrency 1,8]
                                       [--ingest-repeat 3]
    .venv/bin/python bench/overhead.py --smoke [--cache DIR]   (the lite set, -n 1, no latency, one ingest)
    .venv/bin/python bench/overhead.py --tier 500K --mode complete --workers 5 --latency 0 --ingest-concurrency ""
        (a whole tier: 700 questions; prints the run's summary, its record's path and the peak memory)

Harness own time per question, two ways: of wall clock — the run's wall time minus the time
spent waiting on the model (summed call latency, divided by the extraction concurrency during
ingest where calls overlap, and by the worker count), over the questions; and of worker time —
the ingest, agent and judge phase seconds summed over workers (from the run's record) minus that
waiting, over the questions. With no simulated latency both are the harness's own cost.

Each run also prints the CPU its process tree used (the workers' Python, the Neo4j JVMs, the
controller; from /proc, sampled every 0.25 s, with the tree's total from getrusage), and for how
long the machine's cores were saturated. On a machine whose cores stay saturated through the
ingests, `-n` cannot speed the run up beyond what that CPU allows: those lines say where the
ceiling is.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from ingest_cost import TimedEmbedder  # noqa: E402
from ingest_cost import responder as ingest_responder  # noqa: E402
from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

from pytest_beam.data.sets import load_set  # noqa: E402
from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels  # noqa: E402
from pytest_beam.memory.embeddings import make_embedder  # noqa: E402
from pytest_beam.memory.ingest import IngestConfig, ingest_documents  # noqa: E402
from pytest_beam.services import open_driver, select_provider  # noqa: E402
from tests.e2e.scripted_beam import ScriptedBeamModel  # noqa: E402
from tests.model_server import ScriptedModelServer  # noqa: E402

PHASES = ("extraction", "resolution", "agent", "judge")
CONCURRENCY = 4


class Responder:
    def __init__(self) -> None:
        self.answers = ScriptedBeamModel(answers={})

    def __call__(self, body):
        return ingest_responder(body) or self.answers(body)


class TreeCPU:
    """CPU of a process tree by kind, and how long the machine's cores were saturated.

    Samples /proc every `every` seconds: a process's CPU is its last sample (a process that ends
    between samples loses at most `every` seconds; the tree's total comes from getrusage).
    """

    TICK = os.sysconf("SC_CLK_TCK")
    PAGE = os.sysconf("SC_PAGE_SIZE")

    def __init__(self, every: float = 0.25) -> None:
        self.every = every
        self.root: int | None = None
        self.by_pid: dict[int, tuple[str, float]] = {}
        self.busy: list[tuple[float, float]] = []  # (monotonic time, machine busy fraction since last sample)
        self.peak_rss: dict[str, int] = {}  # kind -> the most bytes its processes held at once
        self.peak_total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-cpu", daemon=True)

    def __enter__(self) -> TreeCPU:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @staticmethod
    def _machine() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields)

    def _kind(self, pid: int) -> str | None:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            return None
        if not cmd:  # a zombie's command line is empty: keep what it was
            return None
        if b"CommunityEntryPoint" in cmd:
            return "neo4j jvm"
        return "controller" if pid == self.root else "worker python"

    def _sample(self) -> None:
        parents: dict[int, int] = {}
        cpu: dict[int, float] = {}
        rss: dict[int, int] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(name)] = int(fields[1])
            cpu[int(name)] = (int(fields[11]) + int(fields[12])) / self.TICK
            rss[int(name)] = int(fields[21]) * self.PAGE
        held: dict[str, int] = {}
        for pid, seconds in cpu.items():
            ancestor, hops = pid, 0
            while ancestor not in (self.root, 0, 1) and hops < 16:
                ancestor, hops = parents.get(ancestor, 0), hops + 1
            if ancestor == self.root:  # _run samples only once the root is known
                # read every time: a JVM is sampled as Python between its fork and its exec
                kind = self._kind(pid) or (self.by_pid[pid][0] if pid in self.by_pid else None)
                if kind:
                    self.by_pid[pid] = (kind, seconds)
                    held[kind] = held.get(kind, 0) + rss.get(pid, 0)
        for kind, size in held.items():
            self.peak_rss[kind] = max(self.peak_rss.get(kind, 0), size)
        self.peak_total = max(self.peak_total, sum(held.values()))

    def _run(self) -> None:
        last = self._machine()
        while not self._stop.wait(self.every):
            if self.root is not None:
                self._sample()
            now = self._machine()
            total = now[1] - last[1]
            self.busy.append((time.monotonic(), (now[0] - last[0]) / total if total else 0.0))
            last = now

    def by_kind(self) -> dict[str, float]:
        kinds: dict[str, float] = {}
        for kind, seconds in self.by_pid.values():
            kinds[kind] = kinds.get(kind, 0.0) + seconds
        return kinds

    def saturated_seconds(self, started: float, threshold: float = 0.9) -> float:
        """Seconds during which the machine's cores were at least `threshold` busy."""
        return sum(self.every for t, busy in self.busy if t >= started and busy >= threshold)


def run_full(server_url: str, workers: int, data: Path, work: Path, mode: str = "full", tier: str = "100K") -> dict:
    project = Path(tempfile.mkdtemp(prefix="beam-overhead-", dir=work))
    (project / "pytest.ini").write_text(f"[pytest]\nbeam_mode = {mode}\n")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", f"--beam-mode={mode}",
           f"--beam-tier={tier}",
           f"--beam-data={data}", f"--beam-base-url={server_url}", "--beam-model=scripted", "--beam-neo4j=local",
           "--beam-cache=off", f"--beam-results={project / 'results'}", "--beam-snapshot=off", "--beam-pass-score=0",
           "--beam-max-calls=1000000", "--beam-max-tokens=1000000000", f"--beam-concurrency={CONCURRENCY}",
           "-n", str(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with TreeCPU() as tree:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        tree.root = proc.pid
        stdout, stderr = proc.communicate()
        wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        print(stdout[-3000:], stderr[-2000:])
        raise SystemExit(f"the full run with -n {workers} failed ({proc.returncode})")
    record_path = next((project / "results").glob("*/record.json"))
    record = json.loads(record_path.read_text())
    usage = record["usage"]
    seconds = record["phase_seconds"]
    waiting_ingest = sum(usage.get(p, {}).get("seconds", 0.0) for p in ("extraction", "resolution")) / CONCURRENCY
    waiting_answer = sum(usage.get(p, {}).get("seconds", 0.0) for p in ("agent", "judge"))
    busy = sum(seconds.values())
    questions = len(record["questions"])
    waiting = waiting_ingest + waiting_answer
    agent_prompts = sorted(q["usage"]["agent"]["prompt_tokens"] for q in record["questions"]
                           if q.get("usage", {}).get("agent"))
    shown = [q["evidence_recall"] for q in record["questions"] if q.get("evidence_recall") is not None]
    return {"workers": workers, "wall": wall, "usage": usage, "seconds": seconds, "questions": questions,
            "own_per_question": max(0.0, busy - waiting) / questions,
            "own_wall_per_question": max(0.0, wall - waiting / workers) / questions,
            "outcomes": {o: sum(q["outcome"] == o for q in record["questions"]) for o in ("passed", "failed", "error")},
            "cpu_total": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "cpu_by_kind": tree.by_kind(), "saturated": tree.saturated_seconds(started),
            "agent_prompts": agent_prompts, "evidence_recall": shown, "record_path": record_path,
            "peak_rss": dict(tree.peak_rss), "peak_total": tree.peak_total, "summary": _summary_section(stdout),
            "record_bytes": record_path.stat().st_size,
            "trace_bytes": sum(f.stat().st_size for f in record_path.parent.glob("trace*"))}


def _summary_section(stdout: str) -> list[str]:
    """The run's own `pytest-beam summary` section, as pytest printed it."""
    lines = stdout.splitlines()
    start = next((n for n, line in enumerate(lines) if "pytest-beam summary" in line), None)
    return lines[start:] if start is not None else []


def ingest_once(server_url: str, documents, concurrency: int, work: Path, embedder) -> float:
    client = ModelClient(EndpointConfig(base_url=server_url, max_retries=0, concurrency=concurrency),
                         RoleModels(agent="bench"))
    service = select_provider("local", work_dir=work).create(f"overhead-c{concurrency}")
    conn = service.start()
    driver = open_driver(conn)
    try:
        started = time.monotonic()
        ingest_documents(driver, conn.database, list(documents), client, embedder,
                         IngestConfig(concurrency=concurrency))
        return time.monotonic() - started
    finally:
        driver.close()
        service.stop()
        client.close()


def print_run(latency: float, r: dict) -> None:
    print(f"\n-- latency {latency:.2f} s, -n {r['workers']}: wall {r['wall']:.1f} s for {r['questions']} questions "
          f"({r['wall'] / r['questions']:.2f} s/question), outcomes {r['outcomes']}")
    print(f"   {'phase':<11}{'calls':>7}{'prompt tok':>13}{'compl. tok':>12}{'model s':>10}{'phase s':>10}")
    for phase in PHASES:
        u = r["usage"].get(phase, {})
        phase_s = r["seconds"].get("ingest" if phase in ("extraction", "resolution") else phase, 0.0)
        print(f"   {phase:<11}{u.get('calls', 0):>7}{u.get('prompt_tokens', 0):>13,}"
              f"{u.get('completion_tokens', 0):>12,}{u.get('seconds', 0.0):>10.1f}{phase_s:>10.1f}")
    print(f"   harness own time per question: {r['own_wall_per_question']:.2f} s of wall clock, "
          f"{r['own_per_question']:.2f} s of worker time (summed over workers)")
    prompts = r["agent_prompts"]
    if prompts:  # what the agent put in front of its model per question, all its steps summed
        from pytest_beam.results.aggregate import percentile

        print(f"   agent prompt tokens per question: mean {sum(prompts) / len(prompts):,.0f}, "
              f"p95 {percentile(prompts, 0.95):,.0f}, "
              f"max {prompts[-1]:,} ({len(prompts)} questions)")
    shown = r["evidence_recall"]
    if shown:  # the share of each question's source messages that the agent's tool results held
        print(f"   recall of what the agent was shown (evidence recall): mean {sum(shown) / len(shown):.3f} "
              f"({len(shown)} questions with source ids)")
    cores = os.cpu_count() or 1
    kinds = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["cpu_by_kind"].items(), key=lambda kv: -kv[1]))
    answering = sum(r["usage"].get(p, {}).get("seconds", 0.0) for p in ("agent", "judge")) / r["workers"]
    print(f"   CPU: {r['cpu_total']:.1f} CPU-s ({kinds}); that alone takes {r['cpu_total'] / cores:.1f} s on "
          f"{cores} cores; cores >=90% busy for {r['saturated']:.0f} s of the {r['wall']:.0f} s")
    print(f"   waiting on answers and judgements, per worker: {answering:.1f} s (agent and judge calls "
          f"run one after another within a worker)")
    mb = 1024 * 1024
    peaks = ", ".join(f"{k} {v / mb:,.0f} MB" for k, v in sorted(r["peak_rss"].items(), key=lambda kv: -kv[1]))
    print(f"   peak memory of the run's processes: {r['peak_total'] / mb:,.0f} MB at once "
          f"({peaks}, each kind's own peak)")
    print(f"   record {r['record_path']} ({r['record_bytes'] / 1024:,.0f} KB; traces {r['trace_bytes'] / mb:,.1f} MB)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA", str(ROOT.parent / "shared" / "beam")))
    parser.add_argument("--latency", default="0,0.2")
    parser.add_argument("--workers", default="1,5")
    parser.add_argument("--ingest-concurrency", default="1,8")
    parser.add_argument("--ingest-repeat", type=int, default=3,
                        help="ingest runs per concurrency; the median is compared (one run varies by ~10%%)")
    parser.add_argument("--work", default=tempfile.gettempdir())
    parser.add_argument("--tier", default="100K", help="BEAM tier of the runs (100K, 500K, 1M, 10M)")
    parser.add_argument("--mode", default=None, help="question set of the runs (default: full; smoke: lite)")
    parser.add_argument("--show-summary", action="store_true", help="print each run's pytest-beam summary")
    add_smoke_options(parser)
    args = parser.parse_args()
    smoke_defaults(parser, args, latency="0", workers="1", ingest_concurrency="1", ingest_repeat=1)
    use_cache(args)
    mode = args.mode or ("lite" if args.smoke else "full")  # smoke: the lite set (1 conversation, 2 questions)
    data, work = Path(args.data).resolve(), Path(args.work)  # the runs' cwd is their own project folder
    latencies = [float(x) for x in args.latency.split(",") if x]
    workers = [int(x) for x in args.workers.split(",") if x]
    runs: dict[tuple[float, int], dict] = {}
    for latency in latencies:
        with ScriptedModelServer(responder=Responder(), latency=latency) as server:
            for n in workers:
                runs[latency, n] = run_full(server.base_url, n, data, work, mode, args.tier)
                print_run(latency, runs[latency, n])
                if args.show_summary:
                    print("\n".join(runs[latency, n]["summary"]))
    print("\nsummary")
    print(f"{'latency s':>10}{'-n':>4}{'wall s':>9}{'s/question':>12}{'own wall s/q':>14}{'own worker s/q':>16}")
    for (latency, n), r in runs.items():
        print(f"{latency:>10.2f}{n:>4}{r['wall']:>9.1f}{r['wall'] / r['questions']:>12.2f}"
              f"{r['own_wall_per_question']:>14.2f}{r['own_per_question']:>16.2f}")
    for latency in latencies:
        if (latency, 1) in runs and (latency, 5) in runs:
            print(f"latency {latency:.2f}: -n 5 is {runs[latency, 1]['wall'] / runs[latency, 5]['wall']:.2f}x "
                  "faster than -n 1")
    concurrencies = [int(x) for x in args.ingest_concurrency.split(",") if x]
    if concurrencies:
        documents = load_set(mode, data).documents["17"]
        embedder = TimedEmbedder(make_embedder("local"))
        ingest_latency = max(latencies) if latencies else 0.2
        times: dict[int, float] = {}
        with ScriptedModelServer(responder=Responder(), latency=ingest_latency) as server:
            for c in concurrencies:
                runs = []
                for _ in range(max(1, args.ingest_repeat)):
                    embedder.seconds = 0.0
                    runs.append((ingest_once(server.base_url, documents, c, work, embedder), embedder.seconds))
                times[c] = statistics.median(t for t, _ in runs)
                print(f"\nconversation 17 ingest at concurrency {c}, latency {ingest_latency:.2f} s: median "
                      f"{times[c]:.1f} s of {len(runs)} runs (" +
                      ", ".join(f"{t:.1f} s, embedding {e:.1f} s" for t, e in runs) + ")")
        if len(times) == 2:
            lo, hi = sorted(times)
            print(f"concurrency {hi} is {times[lo] / times[hi]:.2f}x faster than {lo}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

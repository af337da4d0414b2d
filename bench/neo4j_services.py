"""Bench the Neo4j providers: N services started at once (threads), local JVMs and docker containers.

For each start mode and each N (default 1 and 5) it reports, per service and summarised:
  * start-up time to first query: from start() called to a first `RETURN 1` answered through a
    fresh driver;
  * resident memory (RSS of the JVM from /proc) after start and after the writes;
  * write throughput: `UNWIND $rows AS r MERGE (n:Node {id: r.id}) SET n.v = r.v` over 10,000
    nodes in batches (uniqueness constraint on :Node(id), as the graph schema has), all services
    writing at the same time.

Start modes, measured in the same run: ``plain`` (the signed jars as Maven has them, no class-data
archive: the baseline) and ``fast`` (the provider's default: unsigned jar copies and the
class-data archive, see pytest_beam/services/jvm_startup.py; the archive is written first if it
is missing, so the fast rounds measure starts from it), and ``docker`` (the docker provider: one
container of the pinned image per service through testcontainers; its memory is the container's
cgroup usage as the engine reports it, its id is printed). A docker round starts from an image
already on the engine (.ci/neo4j-image.sh) and checks that no container is left after the stops.

    .venv/bin/python bench/neo4j_services.py [--counts 1,5] [--modes plain,fast,docker] [--nodes 10000]
                                             [--batch 1000] [--heap 512m]
    .venv/bin/python bench/neo4j_services.py --smoke [--cache DIR]   (1 service per mode, 200 nodes; docker
                                                                     where an engine answers, always in CI)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from smoke_options import add_smoke_options, smoke_defaults, use_cache

from pytest_beam.services import open_driver, pid_exists, run_read, run_write, select_provider
from pytest_beam.services.local import LocalNeo4jProvider
from pytest_beam.services.local_install import NEO4J_VERSION

MERGE = "UNWIND $rows AS r MERGE (n:Node {id: r.id}) SET n.v = r.v"


def memory_mb(svc) -> float:
    """The JVM's RSS (local), or the container's memory usage as the engine reports it (docker)."""
    if hasattr(svc, "rss_bytes"):
        return svc.rss_bytes() / 2**20
    stats = svc.container.get_wrapped_container().stats(stream=False)
    return stats.get("memory_stats", {}).get("usage", 0) / 2**20


def container_exists(container_id: str | None) -> bool:
    import docker
    from docker.errors import NotFound

    client = docker.from_env()
    try:
        client.containers.get(container_id)
        return True
    except NotFound:
        return False
    finally:
        client.close()


def warm_archive(heap: str) -> None:
    """One start and clean stop, so the class-data archive exists before the fast rounds."""
    svc = LocalNeo4jProvider(heap=heap).create("bench-archive")
    svc.start()
    svc.stop()


def run_round(n: int, nodes: int, batch: int, heap: str, fast_start: bool = True, docker: bool = False) -> list[dict]:
    if docker:
        provider = select_provider("docker", heap=heap)
    else:
        provider = LocalNeo4jProvider(heap=heap, fast_start=fast_start)
        provider.classpath()  # resolve once, outside the timings
    services = [provider.create(f"bench{n}-{i}") for i in range(n)]
    results: list[dict] = [{} for _ in services]
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def one(i: int) -> None:
        svc, res = services[i], results[i]
        try:
            barrier.wait()
            t0 = time.monotonic()
            conn = svc.start()
            driver = open_driver(conn)
            run_read(driver, conn.database, "RETURN 1 AS x", {}, timeout_s=30, max_rows=1)
            res["startup_s"] = time.monotonic() - t0
            res["rss_start_mb"] = memory_mb(svc)
            run_write(driver, conn.database,
                      "CREATE CONSTRAINT node_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE")
            res["ready"] = time.monotonic()
            barrier.wait()  # all services write at the same time
            rows = [{"id": k, "v": k * 3} for k in range(nodes)]
            t1 = time.monotonic()
            for k in range(0, nodes, batch):
                run_write(driver, conn.database, MERGE, {"rows": rows[k : k + batch]})
            res["write_s"] = time.monotonic() - t1
            count = run_read(driver, conn.database, "MATCH (n:Node) RETURN count(n) AS c", {}, timeout_s=30, max_rows=1)
            assert count[0]["c"] == nodes, count
            res["rss_end_mb"] = memory_mb(svc)
            res["pid"] = getattr(svc, "pid", None)
            res["container"] = getattr(svc, "container_id", None)
            driver.close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        t_stop = time.monotonic()
        stoppers = [threading.Thread(target=s.stop) for s in services]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
        stop_s = time.monotonic() - t_stop
    if errors:
        raise errors[0]
    leftover = [r["container"] for r in results if r.get("container") and container_exists(r["container"])]
    leftover += [r["pid"] for r in results if pid_exists(r.get("pid"))]
    for r in results:
        r["stop_all_s"] = stop_s
        r["leftover"] = leftover
    return results


def _smoke_modes() -> str:
    """The smoke takes the docker round too where an engine answers, and always in CI (where
    .ci/run starts one and builds the image): a broken docker route then fails the smoke."""
    import subprocess

    try:
        answers = subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        answers = False
    if answers or os.environ.get("CI") == "true":
        return "plain,fast,docker"
    print("smoke: docker round left out (no Docker engine answers here; .ci/docker-engine.sh starts one)")
    return "plain,fast"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--counts", default="1,5")
    ap.add_argument("--modes", default="plain,fast")
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--heap", default="512m")
    add_smoke_options(ap)
    args = ap.parse_args()
    smoke_defaults(ap, args, counts="1", nodes=200, batch=100, modes=_smoke_modes())
    use_cache(args)
    load = os.getloadavg()
    print(f"Neo4j {NEO4J_VERSION} local and docker providers, heap {args.heap}, page cache 64m; "
          f"{os.cpu_count()} CPUs, load avg {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} at start")
    print(f"write: {args.nodes} nodes, UNWIND batches of {args.batch}, all services writing at once\n")
    header = (f"{'mode':>6} {'services':>8} {'svc':>4} {'start->1st query s':>19} {'RSS start MB':>13} "
              f"{'RSS end MB':>11} {'write s':>8} {'nodes/s':>9}  container")
    print(header)
    print("-" * len(header))
    summary = []
    for mode in [m for m in args.modes.split(",") if m]:
        if mode not in ("plain", "fast", "docker"):
            raise SystemExit(f"unknown mode {mode!r}: plain, fast or docker")
        if mode == "fast":
            warm_archive(args.heap)
        for n in [int(x) for x in args.counts.split(",") if x]:
            res = run_round(n, args.nodes, args.batch, args.heap, fast_start=mode == "fast", docker=mode == "docker")
            for i, r in enumerate(res):
                print(f"{mode:>6} {n:>8} {i:>4} {r['startup_s']:>19.1f} {r['rss_start_mb']:>13.0f} "
                      f"{r['rss_end_mb']:>11.0f} {r['write_s']:>8.2f} {args.nodes / r['write_s']:>9.0f}  "
                      f"{r.get('container') or '-'}")
            summary.append((mode, n, res))
    print("\nsummary")
    print(f"{'mode':>6} {'services':>8} {'start median/max s':>19} {'RSS/svc MB (end)':>17} {'RSS total MB':>13} "
          f"{'agg nodes/s':>12} {'stop all s':>11} {'left':>5}")
    for mode, n, res in summary:
        st = [r["startup_s"] for r in res]
        rss = [r["rss_end_mb"] for r in res]
        agg = n * args.nodes / max(r["write_s"] for r in res)
        print(f"{mode:>6} {n:>8} {statistics.median(st):>9.1f}/{max(st):<9.1f} {statistics.mean(rss):>17.0f} "
              f"{sum(rss):>13.0f} {agg:>12.0f} {res[0]['stop_all_s']:>11.1f} {len(res[0]['leftover']):>5}")
    medians = {(mode, n): statistics.median(r["startup_s"] for r in res) for mode, n, res in summary}
    for n in sorted({n for _, n, _ in summary}):
        if ("plain", n) in medians and ("fast", n) in medians:
            print(f"{n} at once: fast start is {medians['plain', n] / medians['fast', n]:.2f}x faster to first query")
        if ("docker", n) in medians and ("fast", n) in medians:
            print(f"{n} at once: docker start {medians['docker', n]:.1f} s vs local (fast) "
                  f"{medians['fast', n]:.1f} s to first query (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Every run that started writes its record, holding every request the endpoint was sent: on
Ctrl-C, on SIGTERM and when every ingest fails, in one process and under xdist.

The scripted model answers the first calls, then holds every further call at a gate: once each
process of the run waits there, every call it was paid for has been metered (one request in
flight per process, --beam-concurrency=1), and the test sends the signal. The record must appear
while the held calls are still held (a call in flight is abandoned, not waited out: an embedded
model's call can take minutes); the gate then drops them. The record counts the answered calls
as calls and the held ones as abandoned (sent, never answered, tokens unknown), so its requests
equal the endpoint's count exactly; with no call answered at all (Ctrl-C before the first reply,
issue 32 item 4) the run still writes its record and summary.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.e2e.gated_runs import (
    AS_FROM_A_TERMINAL,
    DropThenServe,
    GatedModel,
    calls,
    held,
    let_go,
    requests,
    the_record,
    the_record_appears,
    usage,
)
from tests.model_server import Reply, ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
PAID = 4  # calls answered before the gate


def start(tmp_path, server, beam_data_dir, select: str, workers: int | None, *extra: str):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    cmd = [sys.executable, "-c", AS_FROM_A_TERMINAL, "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=full",
           "-k", select, f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}",
           "--beam-model=scripted", "--beam-neo4j=local", "--beam-cache=off", "--beam-max-retries=0",
           "--beam-concurrency=1", "--beam-timeout=600", f"--beam-results={tmp_path / 'results'}",
           "--beam-max-calls=100000", "--beam-max-tokens=100000000", "--beam-snapshot=off", *extra]
    if workers:
        cmd += ["-n", str(workers)]
    # the run's Neo4j homes under tmp_path (the temporary folder's), where _worker_running finds them
    return subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)}, start_new_session=True)


# Every pair of (moment, signal, process model) once: four runs instead of the eight of the full
# product, each about 25 s (issue 40). Ctrl-C and SIGTERM each meet one process and xdist, each
# after paid calls and before any reply; what differs by pair is what each run asserts alike.
INTERRUPTIONS = [
    pytest.param(PAID, signal.SIGINT, 2, id="after-paid-calls-ctrl-c-xdist"),
    pytest.param(PAID, signal.SIGTERM, None, id="after-paid-calls-sigterm-one-process"),
    pytest.param(0, signal.SIGINT, None, id="before-any-reply-ctrl-c-one-process"),
    pytest.param(0, signal.SIGTERM, 2, id="before-any-reply-sigterm-xdist"),
]


@pytest.mark.parametrize("paid, signum, workers", INTERRUPTIONS)
def test_an_interrupted_run_writes_a_record_with_every_paid_call(tmp_path, beam_data_dir, workers, signum, paid):
    model = GatedModel(paid)
    processes = 2 if workers else 1
    with ScriptedModelServer(responder=model) as server:
        with held(start(tmp_path, server, beam_data_dir, "conv17 or conv4" if workers else "conv17", workers),
                  model) as proc:
            model.wait_for(lambda: model.waiting >= processes, "every process waits at the gate")
            if signum == signal.SIGINT:
                os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal reaches the whole group
            else:
                proc.send_signal(signal.SIGTERM)  # `kill PID`: the controller only
            # A call in flight is abandoned, not waited out: the record is written while the held
            # calls are still held (the embedded model's calls can take minutes each).
            the_record_appears(tmp_path, proc)
            out = let_go(proc, model)  # the held calls end unanswered
        sent = server.request_count
    record = the_record(tmp_path)
    assert record["partial"] is True and record["partial_reason"].startswith("interrupted"), out[-3000:]
    # issue 43: every selected question is named, run or not, and each not run says why
    named = [q["id"] for q in record["questions"]] + [q["id"] for q in record["not_run"]]
    assert sorted(named) == sorted(set(named)) and len(named) == record["selected_questions"] == (40 if workers else 20)
    assert record["not_run"] and {q["reason"].split(" (")[0] for q in record["not_run"]} == {"interrupted"}, \
        record["not_run"][:2]
    assert f"not run: {len(record['not_run'])} questions (interrupted" in out
    assert calls(record) == paid, (record["usage"], out[-3000:])
    assert usage(record, "abandoned") == processes == sent - paid  # held at the gate when the run stopped
    assert requests(record) == sent
    assert record["phase_seconds"]["ingest"] > 0  # issue 32 item 5: an ingest cut short took time
    assert "pytest-beam summary" in out and f"{processes} abandoned in flight" in out, out[-3000:]


@pytest.mark.parametrize("workers", [None, 2], ids=["one-process", "xdist"])
def test_a_run_whose_every_ingest_fails_writes_its_record_and_summary(tmp_path, beam_data_dir, workers):
    model = GatedModel(PAID, then=Reply.fail(400, "scripted: no more"))
    with ScriptedModelServer(responder=model) as server:
        proc = start(tmp_path, server, beam_data_dir, "conv17 or conv4", workers)
        out, _ = proc.communicate(timeout=900)
        sent = server.request_count
    assert proc.returncode == 1, out[-3000:]
    record = the_record(tmp_path)
    assert record["partial"] is True and record["partial_reason"] == "a conversation's ingest did not finish"
    # every request the endpoint got: the answered ones, and each refused one as a call that failed
    assert requests(record) == sent and calls(record) - usage(record, "errors") == PAID, (record["usage"], sent)
    assert {q["outcome"] for q in record["questions"]} == {"error"} and len(record["questions"]) == 40
    # issue 32 item 5: each failed ingest keeps the time it took (the record said ingest 0.0 s)
    assert sorted(record["graph"]) == ["17", "4"] and all(g["failed"] for g in record["graph"].values())
    assert all(g["seconds"] > 0 for g in record["graph"].values())
    assert record["phase_seconds"]["ingest"] == pytest.approx(sum(g["seconds"] for g in record["graph"].values()))
    assert "pytest-beam summary" in out and "17 (failed)" in out


def _worker_running(tmp_path, label: str) -> int:
    """The pid of the xdist worker whose Neo4j JVM serves `label` (its home is under tmp_path, the run's TMPDIR)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if f"beam-neo4j-{label}-" in cmdline and str(tmp_path) in cmdline:
            return int(stat.rsplit(")", 1)[1].split()[1])  # its parent: the worker that started it
    raise AssertionError(f"no JVM of {label} under {tmp_path}")


def test_a_worker_killed_with_kill_9_leaves_every_request_it_sent_in_the_record(tmp_path, beam_data_dir):
    """Issue 32 item 5: after kill -9 of one worker the record metered fewer calls than the endpoint
    answered (the dead worker's calls in flight, and all it had made when its usage lived only in
    its memory). Every process journals each request as it goes out and each call as it ends; the
    record folds the journals, the dead worker's included: its held call is abandoned, the other
    worker's held call is retried (a dropped connection), the replacement worker ingests conv17
    again, and the record's requests equal the endpoint's count."""
    model = DropThenServe(paid=60)
    with ScriptedModelServer(responder=model) as server:
        with held(start(tmp_path, server, beam_data_dir, "conv17 or conv4", 2, "--beam-max-retries=1",
                        "--beam-pass-score=0"), model) as proc:
            model.wait_for(lambda: model.waiting >= 2, "both workers at the gate")
            os.kill(_worker_running(tmp_path, "conv17"), signal.SIGKILL)
            time.sleep(1)
            out = let_go(proc, model, timeout=900)  # the dead worker's call is never answered; the other's is retried
        sent = server.request_count
        answered = sum(r.status == 200 for r in server.requests)
    # the question the worker was on runs again on its replacement (issue 43: one testcase, exit 0)
    assert proc.returncode == 0 and "replacing crashed worker" in out and "1 rerun" in out, out[-3000:]
    record = the_record(tmp_path)
    assert requests(record) == sent, (record["usage"], sent)
    assert calls(record) - usage(record, "errors") == answered
    assert usage(record, "abandoned") == 1 and usage(record, "retries") == 1
    assert "requests sent: " in out and "1 abandoned in flight" in out
    (rerun,) = [q for q in record["questions"] if "rerun_after_crash" in q["flags"]]  # the killed attempt's
    assert rerun["crashed_attempt_usage"] and rerun["outcome"] == "passed"  # ingest calls, kept on its question

"""Every run that started writes its record, holding every model call paid for: on Ctrl-C, on
SIGTERM and when every ingest fails, in one process and under xdist.

The scripted model answers the first calls, then holds every further call at a gate: once each
process of the run waits there, every call it was paid for has been metered (one request in
flight per process, --beam-concurrency=1), and the test sends the signal. The record must appear
while the held calls are still held (a call in flight is abandoned, not waited out: an embedded
model's call can take minutes); the gate then drops them (a connection error is not a paid
call), so the record's count is exact.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import Reply, ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
PAID = 4  # calls answered before the gate
# A run started from a terminal takes Ctrl-C; one started by a shell script's `&` inherits SIGINT
# ignored, and exec keeps that: the run then never sees the test's Ctrl-C (this is how CI was
# launched by hand once, and the run ended in model errors instead of an interrupt).
AS_FROM_A_TERMINAL = ("import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "sys.exit(pytest.console_main())")


class GatedModel(ScriptedBeamModel):
    def __init__(self, paid: int, then: Reply | None = None) -> None:
        super().__init__()
        self.paid, self.then = paid, then
        self.lock = threading.Lock()
        self.answered = 0
        self.waiting = 0
        self.changed = threading.Condition(self.lock)
        self.gate = threading.Event()

    def __call__(self, body):
        with self.lock:
            if self.answered < self.paid:
                self.answered += 1
                self.changed.notify_all()
                return super().__call__(body)
            self.waiting += 1
            self.changed.notify_all()
        if self.then is not None:
            return self.then
        self.gate.wait(600)
        return Reply.disconnect()

    def wait_for(self, predicate, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout=600), what


def start(tmp_path, server, beam_data_dir, select: str, workers: int | None):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    cmd = [sys.executable, "-c", AS_FROM_A_TERMINAL, "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=full",
           "-k", select, f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}",
           "--beam-model=scripted", "--beam-neo4j=local", "--beam-cache=off", "--beam-max-retries=0",
           "--beam-concurrency=1", "--beam-timeout=600", f"--beam-results={tmp_path / 'results'}",
           "--beam-max-calls=100000", "--beam-max-tokens=100000000", "--beam-snapshot=off"]
    if workers:
        cmd += ["-n", str(workers)]
    return subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ), start_new_session=True)


def the_record_appears(tmp_path, proc, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not list((tmp_path / "results").glob("*/record.json")):
        assert proc.poll() is None, "the run ended without a record"
        assert time.monotonic() < deadline, "no record while the interrupted run's model calls are held"
        time.sleep(0.2)


def the_record(tmp_path) -> dict:
    records = list((tmp_path / "results").glob("*/record.json"))
    assert len(records) == 1, records
    return json.loads(records[0].read_text())


def calls(record: dict) -> int:
    return sum(row.get("calls", 0) for row in record["usage"].values())


@pytest.mark.parametrize("workers", [None, 2], ids=["one-process", "xdist"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_writes_a_record_with_every_paid_call(tmp_path, beam_data_dir, workers, signum):
    model = GatedModel(PAID)
    processes = 2 if workers else 1
    with ScriptedModelServer(responder=model) as server:
        proc = start(tmp_path, server, beam_data_dir, "conv17 or conv4" if workers else "conv17", workers)
        try:
            model.wait_for(lambda: model.waiting >= processes, "every process waits at the gate")
            if signum == signal.SIGINT:
                os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal reaches the whole group
            else:
                proc.send_signal(signal.SIGTERM)  # `kill PID`: the controller only
            # A call in flight is abandoned, not waited out: the record is written while the held
            # calls are still held (the embedded model's calls can take minutes each).
            the_record_appears(tmp_path, proc)
            model.gate.set()  # the held calls end unanswered
            out, _ = proc.communicate(timeout=600)
        finally:
            model.gate.set()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    record = the_record(tmp_path)
    assert record["partial"] is True and record["partial_reason"].startswith("interrupted"), out[-3000:]
    assert calls(record) == PAID, (record["usage"], out[-3000:])
    assert "pytest-beam summary" in out


@pytest.mark.parametrize("workers", [None, 2], ids=["one-process", "xdist"])
def test_a_run_whose_every_ingest_fails_writes_its_record_and_summary(tmp_path, beam_data_dir, workers):
    model = GatedModel(PAID, then=Reply.fail(400, "scripted: no more"))
    with ScriptedModelServer(responder=model) as server:
        proc = start(tmp_path, server, beam_data_dir, "conv17 or conv4", workers)
        out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 1, out[-3000:]
    record = the_record(tmp_path)
    assert record["partial"] is True and record["partial_reason"] == "a conversation's ingest did not finish"
    assert calls(record) == PAID, (record["usage"], out[-3000:])
    assert {q["outcome"] for q in record["questions"]} == {"error"} and len(record["questions"]) == 40
    assert "pytest-beam summary" in out

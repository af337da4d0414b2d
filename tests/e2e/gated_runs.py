"""A run in a subprocess whose model calls the test holds at a gate, then stops, kills or lets go.

Shared by the end-to-end tests of interruptions, crashes and cut-short runs (Ctrl-C, SIGTERM,
kill -9 of a worker, -x, Docker's Ctrl-C): the scripted models that hold calls, the launcher that
takes Ctrl-C as a terminal would, the wait for the record while calls are still held, the
context that always opens the gate and never leaves a run behind, and the record's request sums.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import Reply

# A run started from a terminal takes Ctrl-C; one started by a shell script's `&` inherits SIGINT
# ignored, and exec keeps that: the run then never sees the test's Ctrl-C (this is how CI was
# launched by hand once, and the run ended in model errors instead of an interrupt).
# SIGUSR1 makes the run print every thread's stack to the stderr it was started with (pytest's
# capture holds fd 2 during a test): a run that never writes its record says where it stands.
AS_FROM_A_TERMINAL = ("import faulthandler, os, signal, sys, pytest; "
                      "signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "faulthandler.register(signal.SIGUSR1, file=open(os.dup(2), 'w'), all_threads=True); "
                      "sys.exit(pytest.main())")


class GatedModel(ScriptedBeamModel):
    """Answers the first `paid` calls, then holds every further one at a gate (or answers `then`).
    Once opened, the gate drops the held calls (no reply)."""

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

    def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout=600), what


class DropThenServe(GatedModel):
    """Answers the first calls, holds every further one at a gate; once opened, the held calls are
    dropped (no reply) and every later call is answered (a worker's replacement goes on)."""

    def __call__(self, body):
        with self.lock:
            hold = not self.gate.is_set() and self.answered >= self.paid
            if hold:
                self.waiting += 1
                self.changed.notify_all()
            else:
                self.answered += 1
        if hold:
            self.gate.wait(600)
            return Reply.disconnect()
        return ScriptedBeamModel.__call__(self, body)


class Gated(Protocol):
    gate: threading.Event


@contextlib.contextmanager
def held(proc: subprocess.Popen, model: Gated) -> Iterator[subprocess.Popen]:
    """Whatever the block does or fails on, the gate opens at its end and a run still going is
    killed with its process group: no held call and no run outlives the test."""
    try:
        yield proc
    finally:
        model.gate.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def let_go(proc: subprocess.Popen, model: Gated, timeout: float = 600) -> str:
    """Open the gate (the held calls end unanswered) and wait for the run's end; its output."""
    model.gate.set()
    return proc.communicate(timeout=timeout)[0]


def the_record_appears(results_parent: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """The run's record (under results_parent/results) is written while its calls are still held."""
    deadline = time.monotonic() + timeout
    while not list((results_parent / "results").glob("*/record.json")):
        assert proc.poll() is None, "the run ended without a record"
        if time.monotonic() > deadline:
            os.kill(proc.pid, signal.SIGUSR1)  # the stacks of a run stuck before its record
            time.sleep(3)
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.communicate(timeout=60)[0]
            raise AssertionError(f"no record {timeout:.0f} s after the signal, while the interrupted run's model "
                                 f"calls are held; its output and threads:\n{out[-12000:]}")
        time.sleep(0.2)


def the_record(results_parent: Path) -> dict:
    records = list((results_parent / "results").glob("*/record.json"))
    assert len(records) == 1, records
    return json.loads(records[0].read_text())


def usage(record: dict, key: str) -> int:
    return sum(row.get(key, 0) for row in record["usage"].values())


def calls(record: dict) -> int:
    return usage(record, "calls")


def requests(record: dict) -> int:
    """What the record says the endpoint was sent."""
    return usage(record, "calls") + usage(record, "retries") + usage(record, "abandoned")

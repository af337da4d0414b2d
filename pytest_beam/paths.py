"""Where pytest-beam keeps what it builds once per machine, and a lock for building it.

Neo4j's class path and class-data archive and the quantized embedding model live under
``$BEAM_CACHE_DIR`` (default ``$XDG_CACHE_HOME/pytest-beam``, else ``~/.cache/pytest-beam``).
xdist workers start together, so whoever builds one of these holds :func:`file_lock` first.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator


def cache_root() -> Path:
    base = os.environ.get("BEAM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "pytest-beam",
    )
    return Path(base)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock across processes (POSIX ``flock``; no lock where that is missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

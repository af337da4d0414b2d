"""Model and vocabulary files the product loads, each checked against a sha256 it pins.

A file that does not match is refused before any of it is parsed or run: a changed vocabulary
would move chunk boundaries (and so every prompt), a changed model file is code onnxruntime runs.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..files import sha256_of

__all__ = ["PinnedFileMismatch", "sha256_of", "verified"]


class PinnedFileMismatch(RuntimeError):
    """A model or vocabulary file is not the one the product pins."""

    def __init__(self, path: Path, expected: str, actual: str) -> None:
        super().__init__(
            f"{path} is not the file pytest-beam pins: sha256 {actual}, expected {expected}. "
            "It was changed or replaced; reinstall the package that ships it.")
        self.path = path


@lru_cache(maxsize=16)
def _checked(path: str, size: int, mtime_ns: int, expected: str) -> None:
    actual = sha256_of(Path(path))
    if actual != expected:
        raise PinnedFileMismatch(Path(path), expected, actual)


def verified(path: Path, expected: str) -> Path:
    """``path`` once its sha256 is ``expected`` (hashed once per process while unchanged)."""
    stat = path.stat()
    _checked(str(path), stat.st_size, stat.st_mtime_ns, expected)
    return path

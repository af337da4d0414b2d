"""Request fingerprints and the on-disk response cache.

The cache stores the raw response body (the exact bytes the endpoint returned) of successful
calls whose reply the caller could use (a verdict that parses, an extraction valid for its
schema: :meth:`ModelClient.chat`'s ``accept``) only, one file per key, sharded by the first two
hex digits. Writes are atomic (:func:`pytest_beam.files.atomic_write`), so several processes
(xdist workers) can share one cache directory; a reader sees either nothing or a whole file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..files import atomic_write


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, unicode kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fingerprint(request: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a logical request (no base URL, no key)."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


def cache_key(base_url: str | None, request: Mapping[str, Any]) -> str:
    """sha256 over the endpoint base URL plus the logical request."""
    return fingerprint({"endpoint": (base_url or "").rstrip("/"), "request": dict(request)})


class CorruptCacheEntry(UserWarning):
    """A cache entry could not be used (not a response body); it was treated as a miss."""


class ResponseCache:
    """A directory of ``<key[:2]>/<key>.json`` files holding raw response bodies."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        # Responses the disk refused to keep (full, read-only): counted, never failing the paid call
        # (the next run asks again); read as a log of lines by the run's end (files.LineLog's fields).
        self.path, self.keep_unwritten, self.unwritten = self.directory, False, list[str]()
        self.lost = 0
        self.error: OSError | None = None

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> bytes | None:
        try:
            data = self._path(key).read_bytes()
        except FileNotFoundError:
            with self._lock:
                self.misses += 1
            return None
        with self._lock:
            self.hits += 1
        return data

    def discard(self, key: str, why: str) -> None:
        """Treat an unusable entry as a miss: warn in one line naming its file, and remove it.

        The caller fetches the response again and :meth:`put` stores it in the entry's place, so a
        damaged file costs one call instead of failing every run.
        """
        path = self._path(key)
        reason = " ".join(why.split())
        warnings.warn(CorruptCacheEntry(f"response cache entry {path} is unusable ({reason}); fetching it again"),
                      stacklevel=3)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        with self._lock:
            self.hits -= 1
            self.misses += 1

    def forget(self, key: str) -> None:
        """Remove an entry the caller could not use (a reply that does not parse): quietly, since
        the file itself is a sound response; the next request asks the endpoint again."""
        with contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()
        with self._lock:
            self.hits -= 1
            self.misses += 1

    def put(self, key: str, body: bytes) -> None:
        """Store a successful response body (callers must never pass an error); one the disk
        refuses is counted (:attr:`lost`), the reply it came with still served."""
        try:
            atomic_write(self._path(key), body)
        except OSError as exc:
            with self._lock:
                self.lost += 1
                self.error = exc

    def restore_if_vanished(self) -> None:
        """Nothing to restore: each response is a file of its own (the log interface of a run's end)."""

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("??/*.json"))

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

"""Writing files so that a reader never sees half of one, and locking them across processes.

Records, the response cache, the spend budget, Neo4j's class path and the embedder's build are
all read by other processes (xdist workers, a second run) while they may be written; a file is
therefore written to a temporary sibling and moved into place, and a build that several workers
may start together holds a lock (``filelock``, the same library huggingface_hub and tox use).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol


def atomic_write(path: Path, data: bytes | str, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary sibling, then ``os.replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (pinned model and vocabulary files)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock across processes and threads, held while the block runs."""
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path)):
        yield


_FULL = (errno.ENOSPC, errno.EDQUOT)


def disk_full(exc: BaseException) -> bool:
    """Whether an error is a full disk (or an exhausted quota) rather than any other I/O problem."""
    return isinstance(exc, OSError) and exc.errno in _FULL


def disk_full_text(path: Path | str) -> str:
    """One phrase naming a full disk: where, and how much is free there (when that can be read)."""
    place = Path(path)
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        stat = os.statvfs(place)
        free = f", {stat.f_bavail * stat.f_frsize / 1e6:.1f} MB free"
    except OSError:
        free = ""
    return f"the disk holding {path} is full (No space left on device{free})"


class WriteLog(Protocol):
    """What a writer that a disk may refuse keeps of it, for the run's end to say: a :class:`LineLog`,
    or the response cache (one file per response)."""

    path: Path
    keep_unwritten: bool
    unwritten: list[str]  # kept to hand over
    lost: int  # dropped
    error: OSError | None  # the last refusal

    def restore_if_vanished(self) -> None: ...


class LineLog:
    """A file of lines that one process appends to, which a full disk (or any write error) never
    breaks: a line that cannot be written whole is cut back out of the file (never left torn, to
    be glued to the next one), and the log keeps what it could not write, so its owner can say so
    or carry the lines another way.

    ``keep_unwritten``: keep each line that could not be written in :attr:`unwritten` and try it
    again (first) with the next one; otherwise count it in :attr:`lost`.
    """

    def __init__(self, path: Path, *, keep_unwritten: bool) -> None:
        self.path = path
        self.keep_unwritten = keep_unwritten
        self.unwritten: list[str] = []
        self.lost = 0
        self.error: OSError | None = None  # the last write that failed
        self._fd: int | None = None
        self._lock = threading.Lock()

    def append(self, line: str) -> bool:
        """Write one line (no newline in it); False when it could not be written now."""
        with self._lock:
            lines = [*self.unwritten, line] if self.keep_unwritten else [line]
            try:
                self._write("".join(f"{text}\n" for text in lines).encode("utf-8"))
            except OSError as exc:
                self.error = exc
                if self.keep_unwritten:
                    self.unwritten.append(line)
                else:
                    self.lost += 1
                return False
            self.unwritten = []
            return True

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)  # read back if it vanishes
        start = os.lseek(self._fd, 0, os.SEEK_END)
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            with contextlib.suppress(OSError):  # cutting back frees space, it needs none
                os.ftruncate(self._fd, start)
            raise

    def restore_if_vanished(self) -> None:
        """At the process's end (and on :meth:`close`): when the file was removed while the log was
        open (its folder deleted), the lines written since are still readable through the open
        file; write them back where they belong, or, when the disk refuses, keep them (or count
        them lost)."""
        with self._lock:
            self._restore()

    def _restore(self) -> None:
        if self._fd is None or os.fstat(self._fd).st_nlink > 0:
            return
        chunks, offset = [], 0
        while chunk := os.pread(self._fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        os.close(self._fd)
        self._fd = None
        lines = b"".join(chunks).decode("utf-8").splitlines()
        try:
            self._write("".join(f"{text}\n" for text in [*lines, *self.unwritten]).encode("utf-8"))
            self.unwritten = []
        except OSError as exc:
            self.error = exc
            if self.keep_unwritten:
                self.unwritten = [*lines, *self.unwritten]
            else:
                self.lost += len(lines)

    def close(self) -> None:
        with self._lock:
            self._restore()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def write_error_text(exc: OSError, path: Path | str) -> str:
    """One phrase for a write that failed: a full disk named as such, any other error with its path."""
    if disk_full(exc):
        return disk_full_text(path)
    return f"{exc.strerror or exc} ({exc.filename or path})"

"""What makes a local Neo4j JVM start in 2 s instead of 5: unsigned jar copies and a class-data archive.

Both live beside the cached class path (``~/.cache/pytest-beam/neo4j-<version>/``) and are made
once per machine; bench/neo4j_services.py measures the start with and without them.

* Signed jars: ``eclipse-collections`` ships signed, so the JVM digests every class it loads from
  it and parses a manifest of thousands of entries. Maven has checked the jar's checksum already;
  for a throwaway local test server the signature buys nothing. A copy without the signature
  files is used instead (1 s of CPU less per start).
* Class-data sharing (JDK 13+ dynamic archives, ``-XX:ArchiveClassesAtExit``): the first server
  that stops cleanly writes the classes it loaded to an archive; later JVMs map it instead of
  parsing and verifying some 10k classes again (start CPU about 5.5 s -> 2.2 s). The archive is
  keyed by the java binary, the class path and the JVM options; a JVM that finds it unusable
  says so in its console log and starts the slow way, so a stale archive costs time, not a run.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import atomic_write

_SIGNATURE = re.compile(r"META-INF/[^/]+\.(SF|RSA|DSA|EC)")


def _is_signed(jar: str) -> bool:
    with zipfile.ZipFile(jar) as zf:
        return any(_SIGNATURE.fullmatch(name) for name in zf.namelist())


def _unsigned_copy(jar: str, target: Path) -> None:
    """``jar`` without its signature files, built in memory and written whole (workers race)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(jar) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if not _SIGNATURE.fullmatch(info.filename):
                dst.writestr(info, src.read(info.filename))
    atomic_write(target, buf.getvalue())


def run_classpath(jars: Sequence[str], cache: Path) -> list[str]:
    """``jars`` with every signed jar replaced by an unsigned copy under ``cache/unsigned``.

    The result is remembered in ``cache/run-classpath.txt`` (rebuilt when the class path
    changes), so the jars are scanned once per machine, not per start."""
    key = hashlib.sha256(os.pathsep.join(jars).encode()).hexdigest()[:16]
    remembered = cache / "run-classpath.txt"
    try:
        stored_key, stored = remembered.read_text().split("\n", 1)
        out = [j for j in stored.strip().split(os.pathsep) if j]
        if stored_key == key and len(out) == len(jars) and all(os.path.isfile(j) for j in out):
            return out
    except (OSError, ValueError):
        pass
    out = []
    for jar in jars:
        if _is_signed(jar):
            target = cache / "unsigned" / os.path.basename(jar)
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.is_file():
                _unsigned_copy(jar, target)
            out.append(str(target))
        else:
            out.append(jar)
    atomic_write(remembered, key + "\n" + os.pathsep.join(out) + "\n")
    return out


@dataclass
class ClassDataArchive:
    """The ``-XX`` options for one JVM start, and what to do once that JVM has exited."""

    options: tuple[str, ...]
    writing: Path | None = None  # the archive this JVM writes at exit, moved into place after
    final: Path | None = None
    lock: Any = None  # the held filelock of the writer

    def finish(self) -> None:
        """After the JVM exited: publish the archive it wrote, if it wrote one; release the lock."""
        if self.writing is None or self.final is None:
            return
        try:
            if self.writing.is_file() and self.writing.stat().st_size > 0:
                os.replace(self.writing, self.final)
            else:
                self.writing.unlink(missing_ok=True)  # killed, not stopped: no archive this time
        finally:
            if self.lock is not None:
                self.lock.release()
                self.lock = None
            self.writing = None


def _try_lock(path: Path) -> Any | None:
    """The held lock on ``path`` (a ``filelock`` lock, like every build lock of pytest-beam), or
    None when another JVM holds it. The kernel releases it when its process dies, so a killed
    writer never blocks the archive."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock


def class_data_archive(java: str, classpath: Sequence[str], jvm_options: Sequence[str],
                       cache: Path) -> ClassDataArchive:
    """Use the archive when it is there; otherwise let one JVM (of all processes) write it."""
    real_java = os.path.realpath(shutil.which(java) or java)
    try:
        java_stamp = f"{real_java}:{os.stat(real_java).st_mtime_ns}"
    except OSError:
        java_stamp = real_java
    key = hashlib.sha256("\n".join([java_stamp, os.pathsep.join(classpath), *jvm_options]).encode()).hexdigest()[:16]
    final = cache / f"classes-{key}.jsa"
    if final.is_file() and final.stat().st_size > 0:
        return ClassDataArchive(options=(f"-XX:SharedArchiveFile={final}",))
    cache.mkdir(parents=True, exist_ok=True)
    lock = _try_lock(cache / f"classes-{key}.lock")
    if lock is None:
        return ClassDataArchive(options=())  # another JVM is writing it right now
    writing = cache / f"classes-{key}.{os.getpid()}.tmp"  # one writer per process: the lock
    return ClassDataArchive(options=(f"-XX:ArchiveClassesAtExit={writing}",), writing=writing, final=final, lock=lock)

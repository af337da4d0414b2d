"""A run's files on a disk that refuses them (full, read-only, gone): what could not be written is
said, never silent, and the record goes where it can.

Every process notes what it could not write as it goes (its trace, progress and journal logs
count it, :class:`~pytest_beam.files.LineLog`; its part's writes are counted by ``run_results``);
the controller gathers them, writes the record (under the temporary folder when the run's folder
refuses it) and says in one line which disk, what to do, where the record went and what was lost.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import WriteLog, write_error_text
from .worker_parts import WriteFault

if TYPE_CHECKING:
    from ..results.schema import RunRecord

#: What to do about a disk that refused the run's files.
ADVICE = "free space there, or give the run a results folder on another disk (--beam-results)"
#: Room the run's folder must have at the start: a lite run's files (record, trace, journals) fit in it many times.
ROOM_AT_START = 1 << 20


def room_problem(run_dir: Path, spend_counter: Callable[[], None] | None) -> str | None:
    """Why the run's folder cannot hold the run's files, checked before any model is called (None:
    it can): it is made, ``ROOM_AT_START`` bytes are written there and removed, and the spend
    counter the workers share is created (``spend_counter``, when caps are set)."""
    probe = run_dir / "parts" / ".room"
    try:
        probe.parent.mkdir(parents=True, exist_ok=True)
        with open(probe, "wb", buffering=0) as fh:
            left = memoryview(bytes(ROOM_AT_START))
            while left:  # a disk short of room writes part, then refuses the rest
                written = fh.write(left)
                if not written:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(probe))
                left = left[written:]
        probe.unlink()
        if spend_counter is not None:
            spend_counter()
    except OSError as exc:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
        why = write_error_text(exc, run_dir)
        return (f"pytest-beam: the run's folder {run_dir} cannot hold the run's files: {why}; "
                f"{ADVICE}; nothing was called")
    return None


def faults_of(process: str, logs: Mapping[str, WriteLog], part_failures: int,
              part_error: str | None) -> list[WriteFault]:
    """This process's faults: each log's lines it could not write, and its part's failed writes."""
    out = []
    for what, log in logs.items():
        count = len(log.unwritten) if log.keep_unwritten else log.lost
        if count and log.error is not None:
            out.append(WriteFault(process=process, what=what, count=count, kept=log.keep_unwritten,
                                  error=write_error_text(log.error, log.path)))
    if part_failures and part_error:
        out.append(WriteFault(process=process, what="writes of its part of the run", count=part_failures, kept=True,
                              error=part_error))
    return out


def fallback_folder(run_id: str) -> Path:
    """Where a record goes when the run's folder refuses it."""
    return Path(tempfile.gettempdir()) / "pytest-beam-records" / run_id


def moved_line(run_dir: Path, exc: OSError, written: Path | None, again: OSError | None, fallback: Path) -> str:
    """One line for a record that could not be written into the run's folder: which disk, what to
    do, and where the record went (or that it is lost, and what is left)."""
    line = f"pytest-beam: the record could not be written to {run_dir}: {write_error_text(exc, run_dir)}; {ADVICE}"
    if written is not None:
        return f"{line}; it was written to {written} instead"
    assert again is not None
    return (f"{line}; nor to {fallback}: {write_error_text(again, fallback)}. The record is lost; the run's parts "
            f"stay in {run_dir}")


def faults_line(run_dir: Path, faults: list[WriteFault], moved: str | None) -> str | None:
    """The one line that says what the run could not write and what became of it (None: nothing)."""
    if not faults:
        return moved
    lost = [f for f in faults if not f.kept]
    kept = [f for f in faults if f.kept]
    parts = []
    if lost:
        parts.append("not kept: " + ", ".join(f"{f.count} {f.what} ({f.process})" for f in lost))
    if kept:
        parts.append("kept all the same: " + ", ".join(f"{f.count} {f.what} ({f.process})" for f in kept))
    if moved is not None:
        return f"{moved}; during the run, {'; '.join(parts)}"
    return (f"pytest-beam: writing under {run_dir} failed during the run: {faults[-1].error}; {ADVICE}; "
            f"{'; '.join(parts)}")


@dataclass(frozen=True)
class Written:
    """Where a run's record went, with the exit status that says so and the one line about it."""

    record: RunRecord  # as written (its exit status and write faults final)
    path: Path | None  # None: lost
    in_place: bool  # written into the run's folder
    exitstatus: int
    line: str | None  # what the disk refused, where the record went (None: nothing to say)


def write_where_possible(run_dir: Path, run_id: str, record: RunRecord, exitstatus: int, *, html: bool,
                         faults: list[WriteFault]) -> Written:
    """Write the record into the run's folder, or, when its disk refuses (full, read-only, gone),
    under the temporary folder with the exit status that says so (INTERNAL_ERROR, the record's
    ``exit_status`` too, and its move in ``write_faults``); the line says which disk, what to do,
    where the record went and what could not be kept."""
    from ..results.build import write_run

    not_written: list[str] = []
    try:
        path: Path | None = write_run(run_dir, record, html=html, not_written=not_written)
        moved = None
    except OSError as exc:
        if exitstatus == 0:
            exitstatus = 3  # INTERNAL_ERROR: the record is not where it was asked for
        fallback, again = fallback_folder(run_id), None
        record = record.model_copy(update={"exit_status": int(exitstatus), "write_faults": [
            *record.write_faults, f"record: not written to {run_dir} ({write_error_text(exc, run_dir)}), "
            f"written to {fallback} instead"]})
        try:
            path = write_run(run_dir, record, html=html, target=fallback, not_written=not_written)
        except OSError as exc2:
            path, again = None, exc2
        moved = moved_line(run_dir, exc, path, again, fallback)
    line = faults_line(run_dir, faults, moved)
    if not_written:
        line = (line or "pytest-beam: the record is written, but not everything beside it") + \
            "; not written: " + "; ".join(not_written)
    return Written(record, path, moved is None, exitstatus, line)

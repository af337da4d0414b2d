"""What no test report carries, kept where a killed process cannot lose it: each process's part of the run folder.

A question's record travels on its item's report (``run_results``); an ingest (its graph, time
and calls) and the model relay's request counts belong to no item, and a worker that is killed
with ``kill -9`` sends nothing at its end. So each xdist worker keeps them in its part
(``parts/<worker>.json``), rewritten whole (atomically) after every ingest and every item; the
controller reads every part once, at the end. Model calls have their own journal per process
(``parts/<process>.usage.jsonl``, :class:`pytest_beam.llm.UsageJournal`), appended as each
request goes out, which the controller folds into the record's usage.

The disk may refuse those writes (full, read-only). A worker that ends normally therefore also
hands its part over at its end, through xdist (:class:`WorkerEnd`, ``workeroutput``), with the
journal lines the disk refused and what it could not write (:class:`WriteFault`); only a killed
worker's part is what it last wrote. Each part also keeps the worker's meter as of that write
(``metered``): what a killed worker's journal holds beyond it was paid for by the item it was on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..files import atomic_write
from ..llm.adaptive_limit import LimitState
from ..llm.meter import Usage
from ..results.record_base import IN_RUN
from ..results.schema import IngestEntry, ShardInfo

__all__ = ["PartError", "WorkerEnd", "WorkerPart", "WriteFault", "read_parts", "usage_journal", "write_part"]

#: The model relay's requests per system (chat, embeddings, errors), as ``llm.relay`` counts them.
RelayCounts = dict[str, dict[str, int]]


class PartError(ValueError):
    """A worker's part this version cannot read; the message names the file."""


class WorkerPart(BaseModel):
    """One process's ingests, by run key, its model relay's request counts, its endpoints' limits and
    its meter as of the write."""

    model_config = ConfigDict(extra="forbid")  # written and read by the same version within a run

    ingest: dict[str, IngestEntry] = Field(default_factory=dict)
    relay: RelayCounts = Field(default_factory=dict)
    limits: list[LimitState] = Field(default_factory=list)
    shard: ShardInfo | None = None  # what the worker's collection chose of a --beam-shard run
    metered: dict[str, Usage] = Field(default_factory=dict, description="The process's meter when the part was written")


class WriteFault(BaseModel):
    """What one process of the run could not write where it should (a full disk, a read-only folder)."""

    model_config = ConfigDict(extra="forbid")

    process: str = Field(description="gw0, gw1, ... or controller")
    what: str = Field(description='e.g. "trace lines", "usage journal lines", "writes of its part"')
    count: int
    kept: bool = Field(description="Handed to the controller at the process's end instead (True) or lost")
    error: str = Field(description="The last error, a full disk named as such")

    def text(self) -> str:
        fate = "handed over at its end instead" if self.kept else "lost"
        return f"{self.process}: {self.count} {self.what} not written ({fate}): {self.error}"


class WorkerEnd(BaseModel):
    """What a worker that ends normally hands the controller (xdist's ``workeroutput``): its part as
    it is now, the journal lines its disk refused, and what it could not write."""

    model_config = ConfigDict(extra="forbid")

    part: WorkerPart
    journal: list[str] = Field(default_factory=list, description="Usage journal lines the disk refused, in order")
    faults: list[WriteFault] = Field(default_factory=list)


def part_path(parts: Path, process_name: str) -> Path:
    return parts / f"{process_name}.json"


def usage_journal(parts: Path, process_name: str) -> Path:
    """Where a process of the run journals its model calls (``llm.UsageJournal``); the controller
    folds them all into the record's usage (``run_results.RunResults.finish``)."""
    return parts / f"{process_name}.usage.jsonl"


def write_part(parts: Path, process_name: str, part: WorkerPart) -> None:
    """This process's part, whole (an atomic write: a reader never sees half of it)."""
    atomic_write(part_path(parts, process_name), part.model_dump_json(context=IN_RUN))


def part_of(ingest: Mapping[str, IngestEntry], relay: RelayCounts, metered: Mapping[str, Usage],
            limits: list[LimitState] | None = None, shard: ShardInfo | None = None) -> WorkerPart:
    return WorkerPart(ingest=dict(ingest), relay=relay, metered=dict(metered), limits=list(limits or []), shard=shard)


def read_parts(parts: Path) -> list[tuple[Path, WorkerPart]]:
    """Every worker's part, as its last write left it (a worker that died keeps what it wrote);
    ``path.stem`` is the process's name."""
    out = []
    for path in sorted(parts.glob("*.json")):
        try:
            out.append((path, WorkerPart.model_validate(json.loads(path.read_text(encoding="utf-8")))))
        except (ValidationError, ValueError) as exc:
            raise PartError(f"the worker's part {path} is not one this run can read: {exc}") from exc
    return out


def crashed_usage(parts: Path, process_name: str) -> dict[str, Usage]:
    """What a killed worker paid for after its last part was written: its journal's usage beyond the
    meter that part kept (the item it was on; calls in flight count as abandoned), by role."""
    from ..llm.meter import read_journals

    journal = read_journals([usage_journal(parts, process_name)])
    metered: dict[str, Usage] = {}
    path = part_path(parts, process_name)
    if path.exists():
        metered = WorkerPart.model_validate_json(path.read_text(encoding="utf-8")).metered
    out = {}
    for role, usage in journal.items():
        beyond = usage - metered.get(role, Usage())
        # a call metered an instant before its journal line: never a negative count
        beyond = Usage(**{name: max(value, 0) for name, value in beyond.model_dump().items()})
        if not beyond.is_zero():
            out[role] = beyond
    return out

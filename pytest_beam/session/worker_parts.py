"""What no test report carries, kept where a killed process cannot lose it: each process's part of the run folder.

A question's record travels on its item's report (``run_results``); an ingest (its graph, time
and calls) and the model relay's request counts belong to no item, and a worker that is killed
with ``kill -9`` sends nothing at its end. So each xdist worker keeps them in its part
(``parts/<worker>.json``), rewritten whole (atomically) after every ingest and every item; the
controller reads every part once, at the end. Model calls have their own journal per process
(``parts/<process>.usage.jsonl``, :class:`pytest_beam.llm.UsageJournal`), appended as each
request goes out, which the controller folds into the record's usage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..files import atomic_write
from ..llm.adaptive_limit import LimitState
from ..results.record_base import IN_RUN
from ..results.schema import IngestEntry, ShardInfo

__all__ = ["PartError", "WorkerPart", "read_parts", "usage_journal", "write_part"]

#: The model relay's requests per system (chat, embeddings, errors), as ``llm.relay`` counts them.
RelayCounts = dict[str, dict[str, int]]


class PartError(ValueError):
    """A worker's part this version cannot read; the message names the file."""


class WorkerPart(BaseModel):
    """One process's ingests, by run key, its model relay's request counts and its endpoints' limits."""

    model_config = ConfigDict(extra="forbid")  # written and read by the same version within a run

    ingest: dict[str, IngestEntry] = Field(default_factory=dict)
    relay: RelayCounts = Field(default_factory=dict)
    limits: list[LimitState] = Field(default_factory=list)
    shard: ShardInfo | None = None  # what the worker's collection chose of a --beam-shard run


def part_path(parts: Path, process_name: str) -> Path:
    return parts / f"{process_name}.json"


def usage_journal(parts: Path, process_name: str) -> Path:
    """Where a process of the run journals its model calls (``llm.UsageJournal``); the controller
    folds them all into the record's usage (``run_results.RunResults.finish``)."""
    return parts / f"{process_name}.usage.jsonl"


def write_part(parts: Path, process_name: str, ingest: Mapping[str, IngestEntry], relay: RelayCounts,
               limits: list[LimitState], shard: ShardInfo | None = None) -> None:
    """This process's part, whole (an atomic write: a reader never sees half of it)."""
    part = WorkerPart(ingest=dict(ingest), relay=relay, limits=limits, shard=shard)
    atomic_write(part_path(parts, process_name), part.model_dump_json(context=IN_RUN))


def read_parts(parts: Path) -> list[tuple[Path, WorkerPart]]:
    """Every worker's part, as its last write left it (a worker that died keeps what it wrote)."""
    out = []
    for path in sorted(parts.glob("*.json")):
        try:
            out.append((path, WorkerPart.model_validate(json.loads(path.read_text(encoding="utf-8")))))
        except (ValidationError, ValueError) as exc:
            raise PartError(f"the worker's part {path} is not one this run can read: {exc}") from exc
    return out

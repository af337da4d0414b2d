"""The run record, by its old address: every public name of the record's modules.

The record's schema is in :mod:`.schema`, its aggregation in :mod:`.aggregate`, the results
folder's files in :mod:`.store` and the run's provenance in :mod:`.provenance`; code that imports
``pytest_beam.results.record`` (the run collector, older scripts) keeps working.
"""

from __future__ import annotations

from .aggregate import aggregate
from .provenance import git_info, lockfile_hash, prompt_hashes, scoring_stamp
from .schema import (
    KNOWN_BAD_FLAG,
    LATEST_FILE,
    NOTICE_FILE,
    RECORD_FILE,
    ROLES,
    SCHEMA_VERSION,
    TRACE_FILE,
    AbilityStats,
    ItemScore,
    MeanInterval,
    OverallStats,
    QuestionRecord,
    RunRecord,
    ScoringStamp,
    UsageRow,
)
from .store import (
    Listed,
    RecordNotFound,
    iter_trace,
    list_records,
    load_traces,
    normalize_step,
    notice_text,
    read_record,
    resolve_record_path,
    with_traces,
    write_record,
)

__all__ = [
    "SCHEMA_VERSION", "RECORD_FILE", "TRACE_FILE", "NOTICE_FILE", "LATEST_FILE", "ROLES", "KNOWN_BAD_FLAG",
    "UsageRow", "ItemScore", "QuestionRecord", "AbilityStats", "OverallStats", "RunRecord", "MeanInterval",
    "ScoringStamp", "prompt_hashes", "scoring_stamp",
    "RecordNotFound", "Listed", "aggregate", "write_record", "read_record", "resolve_record_path", "list_records",
    "iter_trace", "load_traces", "normalize_step", "with_traces", "notice_text", "git_info", "lockfile_hash",
]

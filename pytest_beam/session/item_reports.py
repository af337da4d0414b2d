"""What the reports of one question's item say: its record, pytest's verdict, its error in short,
and the attempt an xdist worker crashed on.

A worker killed mid-question (kill -9, out of memory) leaves its item to xdist, which reports a
crash and, while it may still replace workers, runs the item again on another one. The crash
report is then a re-run (outcome ``rerun``: no testcase, no failure, "R" on the terminal), and
the item keeps one result, the re-run's, whose usage holds the crashed attempt's paid calls too,
flagged (``RERUN_FLAG``) and itemised (``crashed_attempt_usage``), so JUnit's per-question
figures add up to the record's totals. With no re-run to come the crash stays an error, as every
infrastructure fault is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..llm.meter import Snapshot
    from ..results.question_record import QuestionRecord, TestOutcome

RERUN = "rerun"  # the outcome of a crash report whose item xdist runs again


class ResultError(ValueError):
    """A report carries a question's record this version cannot read."""


@dataclass
class CrashedAttempt:
    """An attempt at an item that its xdist worker did not survive."""

    worker: str  # gw0, gw1, ...
    error: str  # xdist's "worker 'gw1' crashed while running ..."
    usage: Snapshot  # the worker's calls after its last part: what this attempt paid for (with questions
    # answered ahead beside it on that worker, question_pool.py, theirs too: the crash names one item)
    rerun: bool  # whether xdist runs the item again


@dataclass
class ReportedItem:
    """What the reports of one item said: its record (from the report that carried it) and pytest's verdict."""

    question_id: str
    system: str
    record: QuestionRecord | None = None  # None: no report carried one (an error before the answer, a skip)
    outcome: TestOutcome | None = None  # None: only its setup was reported
    error: str | None = None
    crashed: CrashedAttempt | None = None  # an attempt a worker crashed on, its paid calls kept

    def add(self, report: pytest.TestReport) -> None:
        """One report of the item: the record it carries (the crashed attempt's calls added, on the
        report's properties too, before JUnit reads them) and the verdict it gives."""
        from .verdict import RESULT_PROPERTY, amended_properties

        if report.outcome == RERUN:  # the crash of an attempt xdist runs again: the re-run gives the verdict
            return
        text = dict(report.user_properties).get(RESULT_PROPERTY)
        if text is not None:
            record = result_of(report.nodeid, str(text))
            if self.crashed is not None:
                record = with_crashed_attempt(record, self.crashed)
                report.user_properties = amended_properties(report.user_properties, record)
            self.record = record
        if report.when == "call" or report.outcome != "passed":
            self.outcome = outcome_of(report)
            if report.outcome != "passed" and self.outcome in ("error", "skipped"):
                self.error = short_error(report)
            elif report.when == "call":  # a re-run's verdict stands alone
                self.error = None


def with_crashed_attempt(record: QuestionRecord, attempt: CrashedAttempt) -> QuestionRecord:
    """The record with the crashed attempt's paid calls added to its usage, itemised and flagged (once)."""
    from ..llm.meter import add_usage
    from ..results.question_record import RERUN_FLAG

    if RERUN_FLAG in record.flags:
        return record
    usage = {role: row.model_copy() for role, row in record.usage.items()}
    add_usage(usage, attempt.usage)
    return record.model_copy(update={"usage": usage, "crashed_attempt_usage": dict(attempt.usage),
                                     "flags": sorted({*record.flags, RERUN_FLAG})})


def result_of(nodeid: str, text: str) -> QuestionRecord:
    """A report's ``beam_result``: the question's record as the test built it."""
    from pydantic import ValidationError

    from ..results.question_record import QuestionRecord

    try:
        return QuestionRecord.model_validate_json(text)
    except ValidationError as exc:
        raise ResultError(f"{nodeid}: its beam_result is no question record: {exc}") from exc


def outcome_of(report: pytest.TestReport) -> TestOutcome:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when != "call" and report.failed:
        return "error"
    return report.outcome


def short_error(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and crash.message:
        return str(crash.message)[:500]  # "Neo4jServiceDown: the Neo4j service of conv1 ..."
    text = getattr(report, "longreprtext", "") or ""
    return text.strip().splitlines()[-1][:500] if text.strip() else report.outcome

"""Gathers a run's results in this process; the controller (or the only process) writes the record.

One road for each thing the record holds:

- A question's record (:class:`~pytest_beam.results.question_record.QuestionRecord`, built once by
  the test) rides on its item's report as the ``beam_result`` user property, which xdist copies to
  the controller; the report also brings pytest's verdict on it. Nothing else carries it.
- What no report carries (each ingest, the model relay's counts) an xdist worker keeps in its part
  of the run folder (``worker_parts``), which the controller reads once at the end, a killed
  worker's as it last wrote it.
- Every process journals its model calls as each request goes out and as each call ends
  (``llm.UsageJournal``); the controller folds every journal, so the record's usage is what the
  endpoint was sent, calls in flight at the end included.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..llm.adaptive_limit import limits
from .verdict import RESULT_PROPERTY
from .worker_parts import RelayCounts, read_parts, write_part

if TYPE_CHECKING:
    from ..data.ids import ItemId
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..llm.adaptive_limit import LimitState
    from ..llm.meter import Snapshot
    from ..results.question_record import QuestionRecord, TestOutcome
    from ..results.schema import IngestEntry, RunRecord, ShardInfo
    from ..settings import Settings
    from ..system import IngestReport
    from .calibration_at_finish import SessionJudgeCheck
    from .interrupt import TerminateAsInterrupt
    from .plan import RunPlan

NO_VERDICT = "the run stopped before this question's verdict"


class ResultError(ValueError):
    """A report carries a question's record this version cannot read."""


@dataclass
class ReportedItem:
    """What the reports of one item said: its record (from the report that carried it) and pytest's verdict."""

    question_id: str
    system: str
    record: QuestionRecord | None = None  # None: no report carried one (an error before the answer, a skip)
    outcome: TestOutcome | None = None  # None: only its setup was reported
    error: str | None = None


class RunResults:
    """Built at session start, with what it reads: the plan (run folder, process), the run's settings,
    systems and set, when the run started, this process's relay counts and the SIGTERM handler."""

    def __init__(self, plan: RunPlan, settings: Settings, systems: list[str], bench_set: BenchmarkSet, *,
                 started: float, relay_counts: Callable[[], RelayCounts], terminate: TerminateAsInterrupt) -> None:
        self.plan, self.settings, self.systems, self.bench_set = plan, settings, systems, bench_set
        self.relay_counts, self.terminate = relay_counts, terminate
        self.items: dict[str, ReportedItem] = {}  # by item id, in the order their first report came
        self.ingest: dict[str, IngestEntry] = {}
        self.meter: Snapshot = {}
        self.relay: RelayCounts = {}  # the model relay's requests, from every process
        self.limits: dict[str, list[LimitState]] = {}  # process -> its endpoints' adaptive limits
        self.shard: ShardInfo | None = None  # set by collection on a --beam-shard run (a worker's, under xdist)
        self.started = started
        self.record: RunRecord | None = None
        self.cap_line: str | None = None  # set by finish when the spend cap stopped every question
        self.record_path: Path | None = None  # where finish wrote the record
        self.write_line: str | None = None  # set by finish when the record could not go where asked
        self.judge_check: SessionJudgeCheck | None = None  # the judge's calibration, when the run made one
        self.parts = plan.run_dir / "parts"
        self._lock = threading.RLock()  # ingests are added from the client's threads

    @property
    def interrupted_by(self) -> str | None:
        """A signal's name, when one ended the run."""
        return self.terminate.received

    # ------------------------------------------------------------ in any process

    def persist(self) -> None:
        """On an xdist worker: write this process's part (what no report carries) for the controller."""
        if self.plan.is_worker:
            with self._lock:
                write_part(self.parts, self.plan.process_name, self.ingest, self.relay_counts(), limits(), self.shard)

    def add_ingest(self, key: str, report: IngestReport, usage: Snapshot) -> None:
        from ..results.schema import IngestEntry

        with self._lock:
            self.ingest[key] = IngestEntry(
                chunks=report.chunks, empty_extractions=report.empty_extractions,
                entities_by_type=dict(report.entities_by_type), relations_by_type=dict(report.relations_by_type),
                seconds=round(report.seconds, 3), usage=usage, notes=list(report.notes))
            self.persist()

    def add_failed_ingest(self, key: str, seconds: float, usage: Snapshot, error: str) -> None:
        """An ingest that raised or was interrupted: its time and the calls it made are kept."""
        from ..results.schema import IngestEntry

        with self._lock:
            self.ingest[key] = IngestEntry(failed=error, seconds=round(seconds, 3), usage=usage)
            self.persist()

    def add_report(self, report: pytest.TestReport) -> None:
        from ..data.ids import item_id_of_nodeid

        item = item_id_of_nodeid(report.nodeid)
        if item is None:
            return
        with self._lock:
            self._add_report(item, report)
            self.persist()  # the relay's counts as of this item

    def _add_report(self, item: ItemId, report: pytest.TestReport) -> None:
        """Keyed by the item's id: the question id, after its system's name when systems are compared."""
        entry = self.items.get(str(item))
        if entry is None:
            entry = self.items[str(item)] = ReportedItem(str(item.question), item.system or self.systems[0])
        text = dict(report.user_properties).get(RESULT_PROPERTY)
        if text is not None:
            entry.record = _result(report.nodeid, str(text))
        if report.when == "call" or report.outcome != "passed":
            entry.outcome = _outcome(report)
            if report.outcome != "passed" and entry.outcome in ("error", "skipped"):
                entry.error = _short(report)
            elif report.when == "call":  # run again after a crashed worker: the new verdict stands alone
                entry.error = None

    def ran(self) -> set[str]:
        """The ids of the questions that ran to a verdict (neither skipped nor errored)."""
        return {e.question_id for e in self.items.values() if e.outcome not in (None, "skipped", "error")}

    # ------------------------------------------------------------ controller

    def question_records(self) -> list[QuestionRecord]:
        """Each reported item's record with pytest's verdict; one whose report carried none (an error
        before the answer, a skip) built from its question's data by the same builder."""
        from ..results.question_record import question_record

        out = []
        for entry in self.items.values():
            outcome = entry.outcome or "error"
            error = entry.error if entry.outcome is not None else NO_VERDICT
            if entry.record is not None:
                out.append(entry.record.with_verdict(outcome, error))
            else:
                out.append(question_record(self._question(entry.question_id), system=entry.system,
                                           outcome=outcome, error=error))
        return out

    def _question(self, question_id: str) -> ProbingQuestion:
        for question in self.bench_set.questions:
            if question.id == question_id:
                return question
        raise ResultError(f"a report names question {question_id}, which the run's set does not hold")

    def merge_parts(self) -> None:
        """Every worker's part and every process's journal of model calls, this one's included."""
        from ..llm import read_journals

        self.meter = read_journals(sorted(self.parts.glob("*.usage.jsonl")))
        for path, part in read_parts(self.parts):
            if part.limits:
                self.limits[path.stem] = part.limits
            self.shard = self.shard or part.shard  # every worker collects the same
            for key, info in part.ingest.items():
                if info.failed is None or key not in self.ingest:  # a finished ingest wins over a failed one
                    self.ingest[key] = info
            add_counts(self.relay, part.relay)

    def finish(self, exitstatus: int) -> int:
        """Merge the workers' parts, write the record; the run's exit status (a run the spend cap
        stopped entirely is not a green one: USAGE_ERROR, with :attr:`cap_line` saying why)."""
        from ..llm import Usage, add_usage
        from ..results.build import build_record, endpoint_limits, write_run

        plan = self.plan
        self.merge_parts()
        self.cap_line = self._stopped_by_cap()
        if self.cap_line and exitstatus == pytest.ExitCode.OK:
            exitstatus = int(pytest.ExitCode.USAGE_ERROR)
        spent = any(row.all_calls or row.abandoned or row.errors for row in self.meter.values())
        ran = any(e.outcome not in (None, "skipped") for e in self.items.values())
        if not self.ingest and not spent and not ran:
            # nothing ran (everything skipped or deselected): no record, and no folder left
            # holding only workers' parts and progress logs
            shutil.rmtree(plan.run_dir, ignore_errors=True)
            return exitstatus
        add_counts(self.relay, self.relay_counts())
        if limits():
            self.limits[plan.process_name] = limits()
        check = self.judge_check
        if check is not None and check.usage:  # made on the controller by its own client, before the questions
            add_usage(self.meter, {"judge check": sum(check.usage.values(), Usage())})
        self.record = build_record(
            run_id=plan.run_id, started=self.started, settings=self.settings, bench_set=self.bench_set,
            questions=self.question_records(), ingest=self.ingest, usage=self.meter, exitstatus=exitstatus,
            interrupted_by=self.interrupted_by, systems=self.systems, relay=self.relay,
            judge_check=check.check if check else None, judge_check_error=check.error if check else None,
            endpoint_limits=endpoint_limits(self.limits), shard=self.shard)
        try:
            self.record_path = write_run(plan.run_dir, self.record, html=self.settings.html)
        except OSError as exc:
            self.record_path, self.write_line = self._write_elsewhere(exc)
            if exitstatus == pytest.ExitCode.OK:
                exitstatus = int(pytest.ExitCode.INTERNAL_ERROR)  # the record is not where it was asked for
            return exitstatus
        shutil.rmtree(self.parts, ignore_errors=True)
        return exitstatus

    def _write_elsewhere(self, exc: OSError) -> tuple[Path | None, str]:
        """The record could not be written into the run's folder (a full disk, most often): write it
        under the temporary folder instead, so nothing measured is lost, and say so in one line."""
        import tempfile

        from ..files import disk_full, disk_full_text
        from ..results.build import write_run

        run_dir = self.plan.run_dir
        why = disk_full_text(run_dir) if disk_full(exc) else f"{exc.strerror or exc} ({exc.filename or run_dir})"
        line = f"pytest-beam: the record could not be written to {run_dir}: {why}"
        fallback = Path(tempfile.gettempdir()) / "pytest-beam-records" / self.plan.run_id
        assert self.record is not None
        try:
            path = write_run(run_dir, self.record, html=self.settings.html, target=fallback)
        except OSError as again:
            more = disk_full_text(fallback) if disk_full(again) else f"{again.strerror or again}"
            return None, f"{line}; nor to {fallback}: {more}. The record is lost; the run's parts stay in {run_dir}"
        return path, f"{line}; it was written to {path} instead"

    def _stopped_by_cap(self) -> str | None:
        """One line when every question of the run was skipped and the spend cap skipped them; a
        run where some questions finished before the cap is partial (the record says so), not this."""
        outcomes = [(e.outcome, e.error or "") for e in self.items.values()]
        if not outcomes or any(outcome != "skipped" for outcome, _ in outcomes):
            return None
        capped = sum("spend cap reached" in error for _, error in outcomes)
        if not capped:
            return None
        s = self.settings
        caps = ", ".join(f"--beam-{name}={value}" for name, value in
                         (("max-calls", s.max_calls), ("max-tokens", s.max_tokens)) if value is not None)
        return (f"pytest-beam: the spend cap stopped every question ({capped} of {len(outcomes)} skipped by it; "
                f"{caps}): nothing was measured; raise the cap to run them")

    def write_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.record is None:
            if self.cap_line:
                terminalreporter.write_line(self.cap_line, red=True, bold=True)
            return
        from ..results.summary import render_summary

        terminalreporter.write_sep("=", "pytest-beam summary")
        for line in render_summary(self.record):
            terminalreporter.write_line(line)
        for key, entry in self.items.items():
            if entry.record is not None and entry.record.answer_diff:
                terminalreporter.write_line(f"answer changed: {key}")
                for line in entry.record.answer_diff.splitlines():
                    terminalreporter.write_line("    " + line)
        if self.record_path is not None:
            terminalreporter.write_line(f"record: {self.record_path}")
        for warning in (self.write_line, self.cap_line):
            if warning:
                terminalreporter.write_line(warning, red=True, bold=True)


def add_counts(total: RelayCounts, part: RelayCounts) -> None:
    """Add counts into ``total`` by name and key (the model relay's requests per system)."""
    for name, counts in part.items():
        row = total.setdefault(name, {})
        for key, value in counts.items():
            row[key] = row.get(key, 0) + value


def _result(nodeid: str, text: str) -> QuestionRecord:
    """A report's ``beam_result``: the question's record as the test built it."""
    from pydantic import ValidationError

    from ..results.question_record import QuestionRecord

    try:
        return QuestionRecord.model_validate_json(text)
    except ValidationError as exc:
        raise ResultError(f"{nodeid}: its beam_result is no question record: {exc}") from exc


def _outcome(report: pytest.TestReport) -> TestOutcome:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when != "call" and report.failed:
        return "error"
    return report.outcome


def _short(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and crash.message:
        return str(crash.message)[:500]  # "Neo4jServiceDown: the Neo4j service of conv1 ..."
    text = getattr(report, "longreprtext", "") or ""
    return text.strip().splitlines()[-1][:500] if text.strip() else report.outcome

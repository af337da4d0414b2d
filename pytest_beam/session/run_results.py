"""Gathers a run's results in this process; the controller (or the only process) writes the record.

One road for each thing the record holds:

- A question's record (:class:`~pytest_beam.results.question_record.QuestionRecord`, built once by
  the test) rides on its item's report as the ``beam_result`` user property, which xdist copies to
  the controller; the report also brings pytest's verdict on it. Nothing else carries it.
- What no report carries (each ingest, the model relay's counts) an xdist worker keeps in its part
  of the run folder (``worker_parts``), which the controller reads once at the end, a killed
  worker's as it last wrote it; a worker that ends normally hands it over at its end as well, so
  a disk that refused its writes loses nothing (``write_faults`` says what it refused).
- Every process journals its model calls as each request goes out and as each call ends
  (``llm.UsageJournal``); the controller folds every journal, so the record's usage is what the
  endpoint was sent, calls in flight at the end included.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..llm.adaptive_limit import limits
from .item_reports import CrashedAttempt, ReportedItem, ResultError
from .worker_parts import RelayCounts, WorkerEnd, WorkerPart, WriteFault, part_of, read_parts, usage_journal, write_part

if TYPE_CHECKING:
    from ..data.ids import ItemId
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..files import WriteLog
    from ..llm.adaptive_limit import LimitState
    from ..llm.meter import Snapshot
    from ..results.question_record import NotRunQuestion, QuestionRecord
    from ..results.schema import IngestEntry, RunRecord, ShardInfo
    from ..settings import Settings
    from ..system import IngestReport
    from .calibration_at_finish import SessionJudgeCheck
    from .interrupt import TerminateAsInterrupt
    from .plan import RunPlan

__all__ = ["JOURNAL_LINES", "ResultError", "RunResults", "add_counts"]

JOURNAL_LINES = "usage journal lines"  # the key of the process's journal among its logs


class RunResults:
    """Built at session start, with what it reads: the plan (run folder, process), the run's settings,
    systems and set, when the run started, this process's relay counts, meter and line logs (the
    journal, the trace, the progress lines, by what they hold) and the SIGTERM handler."""

    def __init__(self, plan: RunPlan, settings: Settings, systems: list[str], bench_set: BenchmarkSet, *,
                 started: float, relay_counts: Callable[[], RelayCounts], terminate: TerminateAsInterrupt,
                 metered: Callable[[], Snapshot] = dict, logs: Callable[[], Mapping[str, WriteLog]] = dict) -> None:
        self.plan, self.settings, self.systems, self.bench_set = plan, settings, systems, bench_set
        self.relay_counts, self.terminate, self.metered, self.logs = relay_counts, terminate, metered, logs
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
        self.part_failures = 0  # this worker's part writes the disk refused, and the last one's error
        self.part_error: str | None = None
        self.ended: dict[str, WorkerEnd] = {}  # controller: what each worker handed over at its end
        self.selected: list[str] = []  # controller: the selected items' nodeids, in collection order
        self.workers_lost: dict[str, str] = {}  # controller: crashed workers xdist did not replace, their error
        self.faults: list[WriteFault] = []  # controller: what every process could not write, gathered by finish
        self._lock = threading.RLock()  # ingests are added from the client's threads

    @property
    def interrupted_by(self) -> str | None:
        """A signal's name, when one ended the run."""
        return self.terminate.received

    # ------------------------------------------------------------ in any process

    def persist(self) -> None:
        """On an xdist worker: write this process's part (what no report carries) for the controller;
        a disk that refuses it is counted (the part is handed over at the worker's end all the same)."""
        if self.plan.is_worker:
            with self._lock:
                try:
                    write_part(self.parts, self.plan.process_name, self._part())
                except OSError as exc:
                    from ..files import write_error_text

                    self.part_failures += 1
                    self.part_error = write_error_text(exc, self.parts)

    def _part(self) -> WorkerPart:
        return part_of(self.ingest, self.relay_counts(), self.metered(), limits(), self.shard)

    def _restore_logs(self) -> None:
        """This process's logs written back where they belong when their folder was deleted under them."""
        for log in self.logs().values():
            log.restore_if_vanished()

    def own_faults(self) -> list[WriteFault]:
        from .write_faults import faults_of

        return faults_of(self.plan.process_name, self.logs(), self.part_failures, self.part_error)

    def worker_end(self) -> str:
        """On a worker, at its end: what it hands the controller through xdist (``WorkerEnd``, as JSON)."""
        from ..results.record_base import IN_RUN

        with self._lock:
            self._restore_logs()
            journal = self.logs().get(JOURNAL_LINES)
            end = WorkerEnd(part=self._part(), journal=list(journal.unwritten) if journal else [],
                            faults=self.own_faults())
        return end.model_dump_json(context=IN_RUN)

    def add_worker_end(self, process_name: str, text: str) -> None:
        """On the controller: a worker's end, as it handed it over."""
        from pydantic import ValidationError

        from .worker_parts import PartError

        try:
            self.ended[process_name] = WorkerEnd.model_validate_json(text)
        except ValidationError as exc:
            raise PartError(f"worker {process_name} handed over an end this run cannot read: {exc}") from exc

    def add_ingest(self, key: str, report: IngestReport, usage: Snapshot) -> None:
        from ..results.schema import IngestEntry

        with self._lock:
            self.ingest[key] = IngestEntry(
                chunks=report.chunks, empty_extractions=report.empty_extractions,
                entities_by_type=dict(report.entities_by_type), relations_by_type=dict(report.relations_by_type),
                seconds=round(report.seconds, 3), usage=usage, notes=list(report.notes),
                span=_ended_now(report.seconds))
            self.persist()

    def add_failed_ingest(self, key: str, seconds: float, usage: Snapshot, error: str) -> None:
        """An ingest that raised or was interrupted: its time and the calls it made are kept."""
        from ..results.schema import IngestEntry

        with self._lock:
            self.ingest[key] = IngestEntry(failed=error, seconds=round(seconds, 3), usage=usage,
                                           span=_ended_now(seconds))
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
        self._entry(item).add(report)

    def _entry(self, item: ItemId) -> ReportedItem:
        """Keyed by the item's id: the question id, after its system's name when systems are compared."""
        entry = self.items.get(str(item))
        if entry is None:
            entry = self.items[str(item)] = ReportedItem(str(item.question), item.system or self.systems[0])
        return entry

    def select(self, nodeids: Iterable[str]) -> None:
        """On the controller: the items the run selected (every worker collects the same; the first says)."""
        if not self.selected:
            self.selected = list(nodeids)

    def crashed(self, report: pytest.TestReport, worker: str, *, rerun: bool) -> None:
        """On the controller: a worker died on this report's item (xdist's crash report); what it paid
        for after its last part is kept for the item's record, and whether xdist runs it again."""
        from ..data.ids import item_id_of_nodeid
        from .worker_parts import crashed_usage

        item = item_id_of_nodeid(report.nodeid)
        if item is None:
            return
        with self._lock:
            error = str(report.longrepr)
            self._entry(item).crashed = CrashedAttempt(worker, error, crashed_usage(self.parts, worker), rerun)
            if not rerun:
                self.workers_lost[worker] = error

    def ran(self) -> set[str]:
        """The ids of the questions that ran to a verdict (neither skipped nor errored)."""
        return {e.question_id for e in self.items.values() if e.outcome not in (None, "skipped", "error")}

    # ------------------------------------------------------------ controller

    def question_records(self) -> list[QuestionRecord]:
        """Each item with a verdict, with its record (one whose report carried none, an error before
        the answer or a skip, built from its question's data by the same builder); an item with no
        verdict is not run (:meth:`not_run`), as the terminal and JUnit count it."""
        from ..results.question_record import question_record
        from .item_reports import with_crashed_attempt

        out = []
        for entry in self.items.values():
            if entry.outcome is None:
                continue
            record = entry.record or question_record(self._question(entry.question_id), system=entry.system)
            if entry.crashed is not None:
                record = with_crashed_attempt(record, entry.crashed)
            out.append(record.with_verdict(entry.outcome, entry.error))
        return out

    def not_run(self, exitstatus: int, stopped: str | None) -> list[NotRunQuestion]:
        """The selected items with no verdict, each with why (``not_run.py``)."""
        from .not_run import not_run, stop_reason

        reason = stop_reason(interrupted_by=self.interrupted_by, exitstatus=exitstatus, stopped=stopped,
                             workers_lost=self.workers_lost)
        selected = self.selected or [f"beam::test_question[{key}]" for key in self.items]
        return not_run(selected, self.items, self.bench_set, self.systems, reason)

    def _question(self, question_id: str) -> ProbingQuestion:
        for question in self.bench_set.questions:
            if question.id == question_id:
                return question
        raise ResultError(f"a report names question {question_id}, which the run's set does not hold")

    def merge_parts(self) -> None:
        """Every worker's part (as it handed it over at its end, else as it last wrote it) and every
        process's journal of model calls, this one's included, with the lines each disk refused."""
        from ..llm import read_journals

        self._restore_logs()
        unwritten = {usage_journal(self.parts, name): end.journal for name, end in self.ended.items() if end.journal}
        own = self.logs().get(JOURNAL_LINES)
        if own is not None and own.unwritten:
            unwritten[usage_journal(self.parts, self.plan.process_name)] = list(own.unwritten)
        self.meter = read_journals(sorted(self.parts.glob("*.usage.jsonl")), unwritten)
        parts = {path.stem: part for path, part in read_parts(self.parts)}
        parts.update({name: end.part for name, end in self.ended.items()})
        self.faults = [*self.own_faults(), *(fault for end in self.ended.values() for fault in end.faults)]
        for name, part in sorted(parts.items()):
            if part.limits:
                self.limits[name] = part.limits
            self.shard = self.shard or part.shard  # every worker collects the same
            for key, info in part.ingest.items():
                if info.failed is None or key not in self.ingest:  # a finished ingest wins over a failed one
                    self.ingest[key] = info
            add_counts(self.relay, part.relay)

    def finish(self, exitstatus: int, stopped: str | None = None) -> int:
        """Merge the workers' parts, write the record; the run's exit status (a run the spend cap
        stopped entirely is not a green one: USAGE_ERROR, with :attr:`cap_line` saying why).
        ``stopped``: why pytest stopped before the end (-x, --maxfail), when it did."""
        from ..llm import Usage, add_usage
        from ..results.build import build_record, endpoint_limits

        plan = self.plan
        self.merge_parts()
        self.cap_line = self._stopped_by_cap()
        if self.cap_line and exitstatus == pytest.ExitCode.OK:
            exitstatus = int(pytest.ExitCode.USAGE_ERROR)
        spent = any(row.all_calls or row.abandoned or row.errors for row in self.meter.values())
        ran = any(e.outcome not in (None, "skipped") for e in self.items.values())
        if not self.ingest and not spent and not ran:
            # nothing ran (everything skipped or deselected): no record, and no folder left
            # holding only workers' parts and progress logs (nor the results folder the run made)
            shutil.rmtree(plan.run_dir, ignore_errors=True)
            with contextlib.suppress(OSError):
                plan.run_dir.parent.rmdir()  # only when empty: it holds no other run
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
            write_faults=[fault.text() for fault in self.faults], not_run=self.not_run(exitstatus, stopped),
            selected_questions=len(self.selected) or None, stopped=stopped,
            endpoint_limits=endpoint_limits(self.limits), shard=self.shard)
        return self._write(exitstatus)

    def _write(self, exitstatus: int) -> int:
        """Write the record where it can go (``write_faults.write_where_possible``); the exit status."""
        from .write_faults import write_where_possible

        assert self.record is not None
        written = write_where_possible(self.plan.run_dir, self.plan.run_id, self.record, exitstatus,
                                       html=self.settings.html, faults=self.faults)
        self.record, self.record_path, self.write_line = written.record, written.path, written.line
        if written.in_place:
            shutil.rmtree(self.parts, ignore_errors=True)
        return written.exitstatus

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


def _ended_now(seconds: float) -> tuple[float, float]:
    """The span of something that took ``seconds`` and ended now, in seconds since the epoch."""
    import time

    now = time.time()
    return (now - seconds, now)

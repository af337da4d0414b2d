"""Gathers a run's results in this process; the controller (or the only process) writes the record.

Per question, data rides on `report.user_properties` (xdist copies those to the controller).
An xdist worker also keeps its part of the run (graph stats, results) on disk in the run folder,
rewritten whole after every ingest and every result; and every process journals its model calls
as each request goes out and as each call ends (`llm.UsageJournal`). The controller merges every
worker's part and folds every journal at the end, even when a worker was interrupted or killed:
the record's usage is then what the endpoint was sent, calls in flight at the end included.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..files import atomic_write

if TYPE_CHECKING:
    from ..data.ids import ItemId
    from ..data.sets import BenchmarkSet
    from ..llm.meter import UsageByRole, UsageCounts
    from ..results.build import IngestEntry
    from ..results.schema import Outcome, QuestionRecord, RunRecord
    from ..settings import Settings
    from ..system import IngestReport
    from .calibration_at_finish import SessionJudgeCheck
    from .interrupt import TerminateAsInterrupt
    from .plan import RunPlan

RelayCounts = Callable[[], dict[str, dict[str, int]]]


class RunCollector:
    """Built at session start, with what it reads: the plan (run folder, process), the run's settings,
    systems and set, when the run started, this process's relay counts and the SIGTERM handler."""

    def __init__(self, plan: RunPlan, settings: Settings, systems: list[str], bench_set: BenchmarkSet, *,
                 started: float, relay_counts: RelayCounts, terminate: TerminateAsInterrupt) -> None:
        self.plan, self.settings, self.systems, self.bench_set = plan, settings, systems, bench_set
        self.relay_counts, self.terminate = relay_counts, terminate
        self.questions: dict[str, QuestionRecord] = {}  # by item id; the fields set are the ones known
        self.ingest: dict[str, IngestEntry] = {}
        self.services: dict[str, str] = {}
        self.meter: UsageByRole = {}
        self.relay: dict[str, dict[str, int]] = {}  # the model relay's requests, merged from every process
        self.started = started
        self.record: RunRecord | None = None
        self.cap_line: str | None = None  # set by finish when the spend cap stopped every question
        self.record_path: Path | None = None  # where finish wrote the record
        self.write_line: str | None = None  # set by finish when the record could not go where asked
        self.judge_check: SessionJudgeCheck | None = None  # the judge's calibration, when the run made one
        self.parts = plan.run_dir / "parts"
        self._lock = threading.RLock()  # model calls persist from the client's threads

    @property
    def interrupted_by(self) -> str | None:
        """A signal's name, when one ended the run."""
        return self.terminate.received

    # ------------------------------------------------------------ in any process

    def persist(self) -> None:
        """On an xdist worker: write this process's part whole (atomic), for the controller to merge."""
        if not self.plan.is_worker:
            return
        with self._lock:
            part = {"ingest": self.ingest, "services": self.services,
                    "questions": {key: q.in_run_dict() for key, q in self.questions.items()},
                    "relay": self.relay_counts()}
            atomic_write(self.parts / f"{self.plan.process_name}.json", json.dumps(part, default=str))

    def add_ingest(self, conversation_id: str, report: IngestReport, usage: UsageByRole) -> None:
        with self._lock:
            self._add_ingest(conversation_id, report, usage)
            self.persist()

    def _add_ingest(self, conversation_id: str, report: IngestReport, usage: UsageByRole) -> None:
        self.ingest[conversation_id] = {
            "chunks": report.chunks, "empty_extractions": report.empty_extractions,
            "entities_by_type": dict(report.entities_by_type), "relations_by_type": dict(report.relations_by_type),
            "seconds": round(report.seconds, 3), "usage": usage, "notes": list(report.notes),
        }

    def add_failed_ingest(self, conversation_id: str, seconds: float, usage: UsageByRole, error: str) -> None:
        """An ingest that raised or was interrupted: its time and the calls it made are kept."""
        with self._lock:
            self.ingest[conversation_id] = {"failed": error, "seconds": round(seconds, 3), "usage": usage}
            self.persist()

    def note_service(self, conversation_id: str, provider: str) -> None:
        with self._lock:
            self.services[conversation_id] = provider

    def add_report(self, report: pytest.TestReport) -> None:
        from ..data.ids import item_id_of_nodeid

        item = item_id_of_nodeid(report.nodeid)
        if item is None:
            return
        with self._lock:
            self._add_report(item, report)
            self.persist()

    def _add_report(self, item: ItemId, report: pytest.TestReport) -> None:
        """Keyed by the item's id: the question id, after its system's name when systems are compared."""
        from ..results.schema import QuestionRecord

        props = dict(report.user_properties)
        entry = self.questions.get(str(item))
        if entry is None:
            entry = self.questions[str(item)] = QuestionRecord(
                id=str(item.question), system=item.system or self.systems[0])
        if "beam_result" in props:
            result = _result(report.nodeid, str(props["beam_result"]))
            for name in result.model_fields_set:  # the result's fields replace the entry's
                setattr(entry, name, getattr(result, name))
        if report.when == "call" or report.outcome != "passed":
            entry.outcome = _outcome(report)
            if report.outcome != "passed" and entry.outcome in ("error", "skipped"):
                entry.error = _short(report)
            elif report.when == "call":  # run again after a crashed worker: the new verdict stands alone
                entry.error = None
                entry.model_fields_set.discard("error")  # unknown again: a worker's part may fill it

    # ------------------------------------------------------------ controller

    def merge_parts(self) -> None:
        """Every worker's part, as its last write left it (a worker that died keeps what it wrote),
        and every process's journal of model calls, this one's included."""
        from ..llm import read_journals
        from ..results.build import add_counts

        self.meter = {role: usage.to_dict() for role, usage in
                      read_journals(sorted(self.parts.glob("*.usage.jsonl"))).items()}
        for path in sorted(self.parts.glob("*.json")):
            part = json.loads(path.read_text(encoding="utf-8"))
            for cid, info in part.get("ingest", {}).items():
                if "failed" not in info or cid not in self.ingest:  # a finished ingest wins over a failed one
                    self.ingest[cid] = info
            self.services.update(part.get("services", {}))
            add_counts(self.relay, part.get("relay", {}))
            for key, entry in part.get("questions", {}).items():
                theirs = _part_result(path, key, entry)
                mine = self.questions.setdefault(key, theirs)
                for name in theirs.model_fields_set - mine.model_fields_set:  # the controller's reports win
                    setattr(mine, name, getattr(theirs, name))

    def finish(self, exitstatus: int) -> int:
        """Merge the workers' parts, write the record; the run's exit status (a run the spend cap
        stopped entirely is not a green one: USAGE_ERROR, with :attr:`cap_line` saying why)."""
        from ..results.build import add_counts, add_usage, build_record, write_run

        plan = self.plan
        self.merge_parts()
        self.cap_line = self._stopped_by_cap()
        if self.cap_line and exitstatus == pytest.ExitCode.OK:
            exitstatus = int(pytest.ExitCode.USAGE_ERROR)
        spent = any(row.get(k) for row in self.meter.values()
                    for k in ("calls", "cached_calls", "replayed_calls", "abandoned", "errors"))
        ran = any(verdict_of(q) not in (None, "skipped") for q in self.questions.values())
        if not self.ingest and not spent and not ran:
            # nothing ran (everything skipped or deselected): no record, and no folder left
            # holding only workers' parts and progress logs
            shutil.rmtree(plan.run_dir, ignore_errors=True)
            return exitstatus
        add_counts(self.relay, self.relay_counts())
        check = self.judge_check
        if check is not None and check.usage:  # made on the controller by its own client, before the questions
            add_usage(self.meter, {"judge check": _one_row(check.usage)})
        self.record = build_record(
            run_id=plan.run_id, started=self.started, settings=self.settings, bench_set=self.bench_set,
            questions=list(self.questions.values()), ingest=self.ingest, usage=self.meter, exitstatus=exitstatus,
            interrupted_by=self.interrupted_by, systems=self.systems, relay=self.relay,
            judge_check=check.check if check else None, judge_check_error=check.error if check else None)
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
        outcomes = [(verdict_of(q), q.error or "") for q in self.questions.values()]
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
        diffs = [(qid, q.answer_diff) for qid, q in self.questions.items() if q.answer_diff]
        for qid, diff in diffs:
            terminalreporter.write_line(f"answer changed: {qid}")
            for line in str(diff).splitlines():
                terminalreporter.write_line("    " + line)
        if self.record_path is not None:
            terminalreporter.write_line(f"record: {self.record_path}")
        for warning in (self.write_line, self.cap_line):
            if warning:
                terminalreporter.write_line(warning, red=True, bold=True)


class ResultError(ValueError):
    """A worker's part or a report carries a question result this version cannot read."""


def _result(nodeid: str, text: str) -> QuestionRecord:
    """A report's ``beam_result``: the question's result as the test made it."""
    from pydantic import ValidationError

    from ..results.schema import QuestionRecord

    try:
        return QuestionRecord.model_validate_json(text)
    except ValidationError as exc:
        raise ResultError(f"{nodeid}: its beam_result is no question result: {exc}") from exc


def _part_result(path: Path, key: str, entry: object) -> QuestionRecord:
    """One question of a worker's part, read back as the result it wrote; anything else is refused."""
    from pydantic import ValidationError

    from ..results.schema import QuestionRecord

    try:
        return QuestionRecord.model_validate(entry)
    except ValidationError as exc:
        raise ResultError(f"the worker's part {path} holds question {key} in a shape this run "
                        f"cannot read: {exc}") from exc


def verdict_of(question: QuestionRecord) -> str | None:
    """The question's outcome once a report gave it one, else None (only its setup was reported)."""
    return question.outcome if "outcome" in question.model_fields_set else None


def _one_row(usage: UsageByRole) -> UsageCounts:
    """A meter's rows (by role) summed into one row."""
    from ..llm.meter import Usage

    return sum((Usage.from_dict(row) for row in usage.values()), Usage()).to_dict()


def _outcome(report: pytest.TestReport) -> Outcome:
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

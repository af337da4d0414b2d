"""Gathers a run's results in this process; the controller (or the only process) writes the record.

Per question, data rides on `report.user_properties` (xdist copies those to the controller).
An xdist worker also keeps its part of the run (usage, graph stats, results) on disk in the run
folder, rewritten whole after every model call and every result, so the controller merges every
worker's part from files at the end, even when a worker was interrupted or killed.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from typing import TYPE_CHECKING, Any

from ..files import atomic_write

import pytest

if TYPE_CHECKING:
    from ..results.record import RunRecord
    from ..system import IngestReport
    from .state import BeamSession

class RunCollector:
    def __init__(self, session: BeamSession) -> None:
        self.session = session
        self.questions: dict[str, dict[str, Any]] = {}
        self.ingest: dict[str, dict[str, Any]] = {}
        self.services: dict[str, str] = {}
        self.meter: dict[str, dict[str, Any]] = {}
        self.started = time.time()
        self.record: RunRecord | None = None
        self.interrupted_by: str | None = None  # a signal's name, when one ended the run
        self.cap_line: str | None = None  # set by finish when the spend cap stopped every question
        self.parts = session.run_dir / "parts"
        self._lock = threading.RLock()  # model calls persist from the client's threads

    # ------------------------------------------------------------ in any process

    def persist(self) -> None:
        """On an xdist worker: write this process's part whole (atomic), for the controller to merge."""
        if not self.session.is_worker:
            return
        with self._lock:
            part = {"ingest": self.ingest, "services": self.services, "meter": self._own_meter(),
                    "questions": self.questions}
            atomic_write(self.parts / f"{self.session.process_name}.json", json.dumps(part, default=str))

    def add_ingest(self, conversation_id: str, report: IngestReport, usage: dict[str, Any]) -> None:
        with self._lock:
            self._add_ingest(conversation_id, report, usage)
            self.persist()

    def _add_ingest(self, conversation_id: str, report: IngestReport, usage: dict[str, Any]) -> None:
        self.ingest[conversation_id] = {
            "cache_hit": report.cache_hit, "chunks": report.chunks, "empty_extractions": report.empty_extractions,
            "entities_by_type": dict(report.entities_by_type), "relations_by_type": dict(report.relations_by_type),
            "seconds": round(report.seconds, 3), "usage": usage, "notes": list(report.notes),
        }

    def note_service(self, conversation_id: str, provider: str) -> None:
        with self._lock:
            self.services[conversation_id] = provider

    def add_report(self, report: pytest.TestReport) -> None:
        from ..data.ids import item_id_of_nodeid

        item = item_id_of_nodeid(report.nodeid)
        if item is None or not report.nodeid.startswith("beam::"):
            return
        with self._lock:
            self._add_report(str(item), report)
            self.persist()

    def _add_report(self, key: str, report: pytest.TestReport) -> None:
        """`key` is the item's id: the question id, after its system's name when systems are compared."""
        from .selection import split_param_id

        system, qid = split_param_id(key) or (None, key)
        props = dict(report.user_properties)
        entry = self.questions.setdefault(key, {"id": qid, "system": system or self.session.systems[0]})
        if "beam_result" in props:
            entry.update(json.loads(str(props["beam_result"])))
        if report.when == "call" or report.outcome != "passed":
            entry["outcome"] = _outcome(report)
            if report.outcome != "passed" and entry["outcome"] in ("error", "skipped"):
                entry["error"] = _short(report)

    def _own_meter(self) -> dict[str, dict[str, Any]]:
        runtime = self.session.runtime
        return runtime.usage() if runtime is not None else {}

    # ------------------------------------------------------------ controller

    def merge_parts(self) -> None:
        """Every worker's part, as its last write left it (a worker that died keeps what it wrote)."""
        from ..results.collect import add_usage

        for path in sorted(self.parts.glob("*.json")):
            part = json.loads(path.read_text(encoding="utf-8"))
            self.ingest.update(part.get("ingest", {}))
            self.services.update(part.get("services", {}))
            add_usage(self.meter, part.get("meter", {}))
            for qid, entry in part.get("questions", {}).items():
                mine = self.questions.setdefault(qid, entry)  # the controller's reports win
                for key, value in entry.items():
                    mine.setdefault(key, value)

    def finish(self, exitstatus: int) -> int:
        """Merge the workers' parts, write the record; the run's exit status (a run the spend cap
        stopped entirely is not a green one: USAGE_ERROR, with :attr:`cap_line` saying why)."""
        from ..results.collect import add_usage, build_record, write_run

        session = self.session
        self.merge_parts()
        self.cap_line = self._stopped_by_cap()
        if self.cap_line and exitstatus == pytest.ExitCode.OK:
            exitstatus = int(pytest.ExitCode.USAGE_ERROR)
        own = self._own_meter()
        spent = any(any(v for k, v in row.items() if k.endswith("calls")) for row in self.meter.values()) or any(
            any(v for k, v in row.items() if k.endswith("calls")) for row in own.values())
        ran = any(q.get("outcome") not in (None, "skipped") for q in self.questions.values())
        if not self.ingest and not spent and not ran:
            # nothing ran (everything skipped or deselected): no record, and no folder left
            # holding only workers' parts and progress logs
            shutil.rmtree(session.run_dir, ignore_errors=True)
            return exitstatus
        add_usage(self.meter, own)
        self.record = build_record(
            run_id=session.run_id, started=self.started, settings=session.settings, bench_set=session.bench_set,
            questions=list(self.questions.values()), ingest=self.ingest, usage=self.meter, exitstatus=exitstatus,
            interrupted_by=self.interrupted_by, systems=session.systems)
        write_run(session.run_dir, self.record, html=session.settings.html)
        shutil.rmtree(self.parts, ignore_errors=True)
        return exitstatus

    def _stopped_by_cap(self) -> str | None:
        """One line when every question of the run was skipped and the spend cap skipped them; a
        run where some questions finished before the cap is partial (the record says so), not this."""
        outcomes = [(q.get("outcome"), str(q.get("error") or "")) for q in self.questions.values()]
        if not outcomes or any(outcome != "skipped" for outcome, _ in outcomes):
            return None
        capped = sum("spend cap reached" in error for _, error in outcomes)
        if not capped:
            return None
        s = self.session.settings
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
        diffs = [(qid, e.get("answer_diff")) for qid, e in self.questions.items() if e.get("answer_diff")]
        for qid, diff in diffs:
            terminalreporter.write_line(f"answer changed: {qid}")
            for line in str(diff).splitlines():
                terminalreporter.write_line("    " + line)
        terminalreporter.write_line(f"record: {self.session.run_dir / 'record.json'}")
        if self.cap_line:
            terminalreporter.write_line(self.cap_line, red=True, bold=True)


def _outcome(report: pytest.TestReport) -> str:
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

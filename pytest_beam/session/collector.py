"""Gathers a run's results in this process; the controller (or the only process) writes the record.

Per question, data rides on `report.user_properties` (xdist copies those to the controller);
per process, the meter and ingest stats ride on `config.workeroutput` at session end.
"""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..results.record import RunRecord
    from ..system import IngestReport
    from .state import BeamSession

_ID_IN_NODEID = re.compile(r"\[(conv\d+:[a-z_]+:\d+)\]$")


class RunCollector:
    def __init__(self, session: BeamSession) -> None:
        self.session = session
        self.questions: dict[str, dict[str, Any]] = {}
        self.ingest: dict[str, dict[str, Any]] = {}
        self.services: dict[str, str] = {}
        self.meter: dict[str, dict[str, Any]] = {}
        self.started = time.time()
        self.record: RunRecord | None = None

    # ------------------------------------------------------------ in any process

    def add_ingest(self, conversation_id: str, report: IngestReport, usage: dict[str, Any]) -> None:
        self.ingest[conversation_id] = {
            "cache_hit": report.cache_hit, "chunks": report.chunks, "empty_extractions": report.empty_extractions,
            "entities_by_type": dict(report.entities_by_type), "relations_by_type": dict(report.relations_by_type),
            "seconds": round(report.seconds, 3), "usage": usage, "notes": list(report.notes),
        }

    def note_service(self, conversation_id: str, provider: str) -> None:
        self.services[conversation_id] = provider

    def add_report(self, report: pytest.TestReport) -> None:
        match = _ID_IN_NODEID.search(report.nodeid)
        if not match or not report.nodeid.startswith("beam::"):
            return
        qid = match.group(1)
        props = dict(report.user_properties)
        entry = self.questions.setdefault(qid, {"id": qid})
        if "beam_result" in props:
            entry.update(json.loads(str(props["beam_result"])))
        if report.when == "call" or report.outcome != "passed":
            entry["outcome"] = _outcome(report)
            if report.outcome != "passed" and entry["outcome"] in ("error", "skipped"):
                entry["error"] = _short(report)

    def _own_meter(self) -> dict[str, dict[str, Any]]:
        runtime = self.session.runtime
        return runtime.usage() if runtime is not None else {}

    def worker_payload(self) -> dict[str, Any]:
        return {"ingest": self.ingest, "services": self.services, "meter": self._own_meter()}

    # ------------------------------------------------------------ controller

    def merge_worker(self, payload: dict[str, Any]) -> None:
        from ..results.collect import add_usage

        self.ingest.update(payload.get("ingest", {}))
        self.services.update(payload.get("services", {}))
        add_usage(self.meter, payload.get("meter", {}))

    def finish(self, exitstatus: int) -> None:
        from ..results.collect import add_usage, build_record, write_run

        session = self.session
        own = self._own_meter()
        spent = any(any(v for k, v in row.items() if k.endswith("calls")) for row in own.values())
        ran = any(q.get("outcome") not in (None, "skipped") for q in self.questions.values())
        if not self.ingest and not spent and not ran:
            return  # nothing ran (no model configured, or everything deselected): no record
        add_usage(self.meter, own)
        self.record = build_record(
            run_id=session.run_id, started=self.started, settings=session.settings, bench_set=session.bench_set,
            questions=list(self.questions.values()), ingest=self.ingest, usage=self.meter, exitstatus=exitstatus)
        write_run(session.run_dir, self.record, html=session.settings.html)

    def write_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.record is None:
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

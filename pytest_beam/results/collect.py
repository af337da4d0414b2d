"""Gathers a run's results in the controller (or the only process) and writes the record.

Per question, data rides on `report.user_properties` (xdist copies those to the controller);
per process, the meter and ingest stats ride on `config.workeroutput` at session end.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from .. import __version__

_ID_IN_NODEID = re.compile(r"\[(conv\d+:[a-z_]+:\d+)\]$")


class RunCollector:
    def __init__(self, state) -> None:
        self.state = state
        self.questions: dict[str, dict[str, Any]] = {}
        self.ingest: dict[str, dict[str, Any]] = {}
        self.services: dict[str, str] = {}
        self.meter: dict[str, dict[str, Any]] = {}
        self.started = time.time()

    # ------------------------------------------------------------ in any process

    def add_ingest(self, conversation_id: str, report, usage: dict[str, Any]) -> None:
        self.ingest[conversation_id] = {
            "cache_hit": report.cache_hit, "chunks": report.chunks, "empty_extractions": report.empty_extractions,
            "entities_by_type": dict(report.entities_by_type), "relations_by_type": dict(report.relations_by_type),
            "seconds": round(report.seconds, 3), "usage": usage, "notes": list(report.notes),
        }

    def note_service(self, conversation_id: str, provider: str) -> None:
        self.services[conversation_id] = provider

    def add_report(self, report) -> None:
        match = _ID_IN_NODEID.search(report.nodeid)
        if not match or not report.nodeid.startswith("beam::"):
            return
        qid = match.group(1)
        props = dict(report.user_properties)
        entry = self.questions.setdefault(qid, {"id": qid})
        if "beam_result" in props:
            entry.update(json.loads(props["beam_result"]))
        if report.when == "call" or report.outcome != "passed":
            entry["outcome"] = _outcome(report)
            if report.outcome != "passed" and entry["outcome"] in ("error", "skipped"):
                entry["error"] = _short(report)

    def _own_meter(self) -> dict[str, Any]:
        runtime = self.state.runtime
        if runtime is None or runtime._models is None:
            return {}
        return runtime.meter.to_dict()

    def worker_payload(self) -> dict[str, Any]:
        return {"ingest": self.ingest, "services": self.services, "meter": self._own_meter()}

    # ------------------------------------------------------------ controller

    def merge_worker(self, payload: dict[str, Any]) -> None:
        self.ingest.update(payload.get("ingest", {}))
        self.services.update(payload.get("services", {}))
        _add_usage(self.meter, payload.get("meter", {}))

    def build_record(self, exitstatus) -> Any:
        from .record import RunRecord, aggregate, git_info, lockfile_hash

        state, settings = self.state, self.state.settings
        if state.worker_id is None:
            _add_usage(self.meter, self._own_meter())
        root = Path.cwd()
        commit, dirty = git_info(root)
        roles = settings.role_models()
        questions = [self._question(entry) for entry in self.questions.values()]
        abilities, overall = aggregate(questions)
        phase_seconds = {"ingest": sum(i.get("seconds", 0.0) for i in self.ingest.values())}
        for entry in self.questions.values():
            for phase, secs in (entry.get("phase_seconds") or {}).items():
                phase_seconds[phase] = phase_seconds.get(phase, 0.0) + secs
        skipped_for_cap = [q.id for q in questions if q.outcome == "skipped" and "spend cap" in (q.error or "")]
        return RunRecord(
            run_id=state.run_id,
            started=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.started)),
            finished=time.strftime("%Y-%m-%dT%H:%M:%S"),
            package_version=__version__, commit=commit, dirty=dirty, lockfile_hash=lockfile_hash(root),
            mode=settings.mode, data_source=state.bench_set.source if state.bench_set else None,
            data_revision=_revision(state.bench_set.source if state.bench_set else ""),
            scorer=settings.scorer, models=roles, judge_is_agent=roles["judge"] == roles["agent"],
            settings=settings.public_dict(), pass_score=settings.pass_score,
            questions=questions, abilities=abilities, overall=overall,
            usage=self.meter, phase_seconds=phase_seconds,
            graph={cid: {k: v for k, v in info.items() if k != "usage"} for cid, info in self.ingest.items()},
            snapshot_changes=[q.id for q in questions if q.answer_changed],
            partial=bool(skipped_for_cap) or exitstatus == 2 or len(self.ingest) < len(self._conversations()),
            partial_reason=("spend cap reached" if skipped_for_cap else "interrupted" if exitstatus == 2
                            else "a conversation's ingest did not finish"
                            if len(self.ingest) < len(self._conversations()) else None),
            exit_status=int(exitstatus),
        )

    def _conversations(self) -> set[str]:
        return {e.get("conversation_id") or e["id"].split(":")[0][4:] for e in self.questions.values()}

    def _question(self, entry: dict[str, Any]):
        from .record import QuestionRecord

        data = dict(entry)
        if "conversation_id" not in data:  # an error or skip before any result: fill from the data
            q = self.state.bench_set and next((x for x in self.state.bench_set.questions if x.id == data["id"]), None)
            if q is not None:
                data.update(conversation_id=q.conversation_id, ability=q.ability, index=q.index,
                            question=q.question, source_message_ids=list(q.source_message_ids),
                            known_bad_reason=q.known_bad_rubric,
                            flags=["known_bad_rubric"] if q.known_bad_rubric else [])
        data.pop("answer_diff", None)
        fields = set(QuestionRecord.model_fields)
        return QuestionRecord.model_validate({k: v for k, v in data.items() if k in fields})

    def finish(self, session, exitstatus) -> None:
        spent = any(any(v for k, v in row.items() if k.endswith("calls")) for row in self._own_meter().values())
        if not self.ingest and not spent and not any("answer" in q for q in self.questions.values()):
            return  # nothing ran (no model configured, or everything deselected): no record
        from .record import write_record

        self.record = self.build_record(exitstatus)
        run_dir = self.state.run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        write_record(run_dir, self.record, _trace_lines(run_dir))
        for part in run_dir.glob("trace-*.jsonl"):
            part.unlink()
        if self.state.settings.html:
            from .html import write_html

            write_html(run_dir, self.record)

    def write_summary(self, terminalreporter) -> None:
        record = getattr(self, "record", None)
        if record is None:
            return
        from .summary import render_summary

        terminalreporter.write_sep("=", "pytest-beam summary")
        for line in render_summary(record):
            terminalreporter.write_line(line)
        diffs = [(qid, e.get("answer_diff")) for qid, e in self.questions.items() if e.get("answer_diff")]
        for qid, diff in diffs:
            terminalreporter.write_line(f"answer changed: {qid}")
            for line in diff.splitlines():
                terminalreporter.write_line("    " + line)
        terminalreporter.write_line(f"record: {self.state.run_dir / 'record.json'}")


def _outcome(report) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when != "call" and report.failed:
        return "error"
    return report.outcome


def _short(report) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and crash.message:
        return crash.message[:500]  # "Neo4jServiceDown: the Neo4j service of conv1 ..."
    text = getattr(report, "longreprtext", "") or ""
    return text.strip().splitlines()[-1][:500] if text.strip() else report.outcome


def _revision(source: str) -> str | None:
    from ..data import pins

    if source.startswith("hf:"):
        return pins.HF_REVISION
    if source.startswith("local:"):
        return pins.UPSTREAM_COMMIT
    return None


def _add_usage(total: dict[str, dict[str, Any]], part: dict[str, dict[str, Any]]) -> None:
    for role, usage in part.items():
        row = total.setdefault(role, {})
        for key, value in usage.items():
            if isinstance(value, (int, float)):
                row[key] = row.get(key, 0) + value


def _trace_lines(run_dir: Path):
    for part in sorted(run_dir.glob("trace-*.jsonl")):
        with part.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)

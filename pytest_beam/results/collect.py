"""From what a run collected to its record: the RunRecord, the files, the optional HTML page.

The session room (`pytest_beam.session.collector`) gathers results while the run goes; this
module only turns them into a record, so the record's shape lives with the other results code.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Required, TypedDict

from .. import __version__

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from ..llm.meter import UsageByRole, UsageCounts
    from ..scoring.judge_check import JudgeCheck
    from ..settings import Settings
    from .record import QuestionRecord, RunRecord
    from .schema import UsageRow


class IngestEntry(TypedDict, total=False):
    """One ingest as the run collects it (``session.collector``), keyed by its conversation (after
    its system's name when systems are compared): a finished one has the report's fields, a failed
    one says why in ``failed``; both keep their time and the calls they made. The record's
    ``graph`` is these without the usage."""

    chunks: int
    empty_extractions: int
    entities_by_type: dict[str, int]
    relations_by_type: dict[str, int]
    seconds: Required[float]
    usage: Required[UsageByRole]
    notes: list[str]
    failed: str


def build_record(*, run_id: str, started: float, settings: Settings, bench_set: BenchmarkSet | None,
                 questions: list[QuestionRecord], ingest: Mapping[str, IngestEntry],
                 usage: UsageByRole, exitstatus: int, interrupted_by: str | None = None,
                 systems: list[str] | None = None, judge_check: JudgeCheck | None = None,
                 judge_check_error: str | None = None, relay: dict[str, dict[str, int]] | None = None) -> RunRecord:
    from .provenance import data_revision, scoring_stamp
    from .record import RunRecord, aggregate, git_info, lockfile_hash

    root = Path.cwd()
    commit, dirty = git_info(root)
    roles = settings.role_models()
    records = [_question(entry, bench_set) for entry in questions]
    from ..systems import MEASUREMENT_AIDS
    from .systems import system_stats

    selected = list(systems or [])  # the selected order (`all` expanded), first is the primary
    seen = [q.system for q in questions if q.system]
    order = [s for s in selected if s in seen] + [s for s in dict.fromkeys(seen) if s not in selected]
    several = len(order) > 1
    # several systems: the top-level means are the first selected system's, each system in `systems`
    primary = [q for q in records if not several or q.system == order[0]]
    abilities, overall = aggregate(primary)
    phase_seconds = {"ingest": sum(i.get("seconds", 0.0) for i in ingest.values())}
    for question in questions:
        for phase, secs in question.phase_seconds.items():
            phase_seconds[phase] = phase_seconds.get(phase, 0.0) + secs
    skipped_for_cap = [q.id for q in records if q.outcome == "skipped" and "spend cap" in (q.error or "")]
    conversations = {(q.system, _conversation_of(q)) for q in questions}
    finished = [info for info in ingest.values() if "failed" not in info]
    # one ingest per (system, conversation)
    unfinished = len(finished) < len(conversations) or len(finished) < len(ingest)
    source = bench_set.source if bench_set else None
    from .leaderboard import leaderboard

    compared = system_stats(records, order, MEASUREMENT_AIDS, ingest) if several else {}
    by_system = usage_by_system(questions, ingest, order) if several or relay else {}
    return RunRecord(
        run_id=run_id,
        started=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        finished=time.strftime("%Y-%m-%dT%H:%M:%S"),
        package_version=__version__, commit=commit, dirty=dirty, lockfile_hash=lockfile_hash(root),
        mode=settings.mode, tier=settings.tier, data_source=source,
        missing_conversations=list(bench_set.missing) if bench_set else [], data_revision=data_revision(source or ""),
        scorer=settings.scorer, models=roles, judge_is_agent=roles["judge"] == roles["agent"],
        settings=settings.public_dict(), pass_score=settings.pass_score,
        questions=records, abilities=abilities, overall=overall,
        usage=usage, phase_seconds=phase_seconds,
        graph={cid: {k: v for k, v in info.items() if k != "usage"} for cid, info in ingest.items()},
        snapshot_changes=[(f"{q.system}-{q.id}" if several else q.id) for q in records if q.answer_changed],
        partial=bool(skipped_for_cap) or exitstatus == 2 or bool(interrupted_by) or unfinished,
        partial_reason=("spend cap reached" if skipped_for_cap
                        else f"interrupted ({interrupted_by})" if interrupted_by
                        else "interrupted" if exitstatus == 2
                        else "a conversation's ingest did not finish" if unfinished else None),
        exit_status=int(exitstatus),
        scoring=scoring_stamp(settings.scorer, settings.judge_runs), label=settings.label,
        system=order[0] if order else None,
        systems=compared, usage_by_system=by_system, relay=dict(relay or {}),
        leaderboard=leaderboard(compared, by_system, records),
        judge_check=judge_check, judge_check_error=judge_check_error,
    )


def usage_by_system(questions: list[QuestionRecord], ingest: Mapping[str, IngestEntry],
                    order: list[str]) -> dict[str, dict[str, UsageRow]]:
    """system -> meter row -> usage, the ingest (keyed `system/conversation`, or bare for the only
    system) and every question's calls added up, systems in the selected order."""
    from .schema import UsageRow

    out: dict[str, dict[str, UsageRow]] = {name: {} for name in order}
    for key, info in ingest.items():
        system = key.split("/", 1)[0] if "/" in key else (order[0] if order else "graphrag")
        # as the record's rows: the meter's latency_s is a row's seconds, as in every question's usage
        _add_rows(out.setdefault(system, {}),
                  {role: UsageRow.model_validate(row) for role, row in (info.get("usage") or {}).items()})
    for question in questions:
        system = question.system or (order[0] if order else "graphrag")
        _add_rows(out.setdefault(system, {}), question.usage)
    return {name: rows for name, rows in out.items() if rows}


def _add_rows(total: dict[str, UsageRow], part: Mapping[str, UsageRow]) -> None:
    for role, row in part.items():
        mine = total.get(role)
        total[role] = row.model_copy() if mine is None else mine + row


def _question(question: QuestionRecord, bench_set: BenchmarkSet | None) -> QuestionRecord:
    """The record's copy of a result; one that errored or was skipped before any result is filled
    from the data (its conversation, ability, question and sources)."""
    if "conversation_id" not in question.model_fields_set:
        q = bench_set and next((x for x in bench_set.questions if x.id == question.id), None)
        if q:
            return question.model_copy(update={
                "conversation_id": q.conversation_id, "ability": q.ability, "index": q.index, "question": q.question,
                "source_message_ids": list(q.source_message_ids), "known_bad_reason": q.known_bad_rubric,
                "flags": ["known_bad_rubric"] if q.known_bad_rubric else []})
    return question.model_copy()


def write_run(run_dir: Path, record: RunRecord, *, html: bool, target: Path | None = None) -> Path:
    """The record and the merged trace of the run whose parts are in ``run_dir``, written into
    ``target`` (default: ``run_dir``); the per-process trace parts are removed once both are
    written. Returns the record's path."""
    from .record import write_record

    target = run_dir if target is None else target
    target.mkdir(parents=True, exist_ok=True)
    path = write_record(target, record, _trace_lines(run_dir))
    for part in run_dir.glob("trace-*.jsonl"):
        part.unlink()
    if html:
        from .html import write_html

        write_html(target, record)
    return path


def add_usage(total: UsageByRole, part: Mapping[str, UsageCounts]) -> None:
    """Add usage rows into ``total``, role by role."""
    from ..llm.meter import Usage

    for role, row in part.items():
        mine = total.get(role)
        total[role] = (Usage.from_dict(row) if mine is None else Usage.from_dict(mine) + Usage.from_dict(row)).to_dict()


def add_counts(total: dict[str, dict[str, int]], part: Mapping[str, Mapping[str, int]]) -> None:
    """Add counts into ``total`` by name and key (the model relay's requests per system)."""
    for name, counts in part.items():
        row = total.setdefault(name, {})
        for key, value in counts.items():
            if isinstance(value, (int, float)):
                row[key] = row.get(key, 0) + value


def _trace_lines(run_dir: Path) -> Iterator[dict[str, Any]]:
    for part in sorted(run_dir.glob("trace-*.jsonl")):
        with part.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def _conversation_of(question: QuestionRecord) -> str:
    """A result's conversation: its ``conversation_id``, else the one its question id names."""
    from ..data.ids import parse_question_id

    if question.conversation_id:
        return question.conversation_id
    parsed = parse_question_id(question.id)
    return parsed.conversation if parsed is not None else question.id

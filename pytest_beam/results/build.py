"""From what a run gathered to its record: the RunRecord with its aggregates, the files, the optional HTML page.

The session room (`pytest_beam.session.run_results`) gathers the questions' records and the
ingests while the run goes; this module only puts them into a run's record (and recomputes the
aggregates of a record whose questions were scored again), so the record's shape lives with the
other results code.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from ..llm.adaptive_limit import LimitState
    from ..llm.meter import Snapshot, Usage
    from ..scoring.judge_check import JudgeCheck
    from ..settings import Settings
    from .question_record import NotRunQuestion, QuestionRecord
    from .record_files import TraceLine
    from .schema import EndpointLimit, IngestEntry, RunRecord, ShardInfo


def build_record(*, run_id: str, started: float, settings: Settings, bench_set: BenchmarkSet | None,
                 questions: list[QuestionRecord], ingest: Mapping[str, IngestEntry],
                 usage: Snapshot, exitstatus: int, interrupted_by: str | None = None,
                 systems: list[str] | None = None, judge_check: JudgeCheck | None = None,
                 judge_check_error: str | None = None, relay: dict[str, dict[str, int]] | None = None,
                 write_faults: list[str] | None = None, not_run: list[NotRunQuestion] | None = None,
                 selected_questions: int | None = None, stopped: str | None = None,
                 endpoint_limits: list[EndpointLimit] | None = None, shard: ShardInfo | None = None) -> RunRecord:
    from .aggregate import aggregate
    from .leaderboard import leaderboard
    from .provenance import data_revision, git_info, lockfile_hash, scoring_stamp
    from .schema import RunRecord

    root = Path.cwd()
    commit, dirty = git_info(root)
    roles = settings.role_models()
    records = list(questions)
    from ..system_registry import MEASUREMENT_AIDS
    from .system_stats import system_stats

    selected = list(systems or [])  # the selected order (`all` expanded), first is the primary
    seen = [q.system for q in questions if q.system]
    order = [s for s in selected if s in seen] + [s for s in dict.fromkeys(seen) if s not in selected]
    several = len(order) > 1
    # several systems: the top-level means are the first selected system's, each system in `systems`
    primary = [q for q in records if not several or q.system == order[0]]
    abilities, overall = aggregate(primary)
    phase_seconds, phase_wall_seconds = phase_times(questions, ingest)
    skipped_for_cap = [q.id for q in records if q.outcome == "skipped" and "spend cap" in (q.error or "")]
    conversations = {(q.system, _conversation_of(q)) for q in questions}
    finished = [info for info in ingest.values() if info.failed is None]
    # one ingest per (system, conversation)
    unfinished = len(finished) < len(conversations) or len(finished) < len(ingest)
    source = bench_set.source if bench_set else None
    not_run = list(not_run or [])
    missing = _not_run_reason(not_run, selected_questions if selected_questions is not None
                              else len(records) + len(not_run))
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
        usage=usage, phase_seconds=phase_seconds, phase_wall_seconds=phase_wall_seconds,
        graph=dict(ingest),
        snapshot_changes=[(f"{q.system}-{q.id}" if several else q.id) for q in records if q.answer_changed],
        not_run=not_run, selected_questions=selected_questions,
        partial=bool(skipped_for_cap) or exitstatus == 2 or bool(interrupted_by) or unfinished or bool(not_run),
        partial_reason=("spend cap reached" if skipped_for_cap
                        else f"interrupted ({interrupted_by})" if interrupted_by
                        else f"the run stopped: {stopped}" if stopped and (exitstatus == 2 or not_run)
                        else "interrupted" if exitstatus == 2
                        else missing if missing
                        else "a conversation's ingest did not finish" if unfinished else None),
        exit_status=int(exitstatus),
        scoring=scoring_stamp(settings.scorer, settings.judge_runs), label=settings.label,
        system=order[0] if order else None,
        systems=compared, usage_by_system=by_system, relay=dict(relay or {}),
        leaderboard=leaderboard(compared, by_system, records),
        judge_check=judge_check, judge_check_error=judge_check_error, write_faults=list(write_faults or []),
        endpoint_limits=list(endpoint_limits or []), shard=shard,
    )


def _not_run_reason(not_run: list[NotRunQuestion], selected: int) -> str | None:
    """The partial run's reason when selected questions have no result (None: every one has)."""
    if not not_run:
        return None
    reasons = list(dict.fromkeys(n.reason for n in not_run))
    more = " (and other reasons: see not_run)" if len(reasons) > 1 else ""
    return f"{len(not_run)} of {selected} selected questions did not run: {reasons[0]}{more}"


def phase_times(questions: list[QuestionRecord],
                ingest: Mapping[str, IngestEntry]) -> tuple[dict[str, float], dict[str, float]]:
    """Each phase's time summed over workers (and questions answered at once), and its wall time:
    its first start to its last end, whatever ran it (workers share the machine's clock)."""
    summed = {"ingest": sum(i.seconds for i in ingest.values())}
    spans: dict[str, list[tuple[float, float]]] = {"ingest": [i.span for i in ingest.values() if i.span]}
    for question in questions:
        for phase, secs in question.phase_seconds.items():
            summed[phase] = summed.get(phase, 0.0) + secs
        for phase, span in question.phase_spans.items():
            spans.setdefault(phase, []).append(span)
    wall = {phase: round(max(end for _, end in got) - min(start for start, _ in got), 3)
            for phase, got in spans.items() if got}
    return summed, wall


def endpoint_limits(by_process: Mapping[str, Sequence[LimitState]]) -> list[EndpointLimit]:
    """Each endpoint's limits as every process left them, one row an endpoint and ceiling."""
    from .schema import EndpointLimit

    rows: dict[tuple[str, int], EndpointLimit] = {}
    for process, states in sorted(by_process.items()):
        for state in states:
            row = rows.get((state.endpoint, state.ceiling))
            if row is None:
                row = rows[(state.endpoint, state.ceiling)] = EndpointLimit(
                    endpoint=state.endpoint, ceiling=state.ceiling, settled={}, lowest=state.lowest)
            row.settled[process] = state.limit
            row.lowest = min(row.lowest, state.lowest)
            row.throttled += state.throttled
            row.timeouts += state.timeouts
    return list(rows.values())


def usage_by_system(questions: list[QuestionRecord], ingest: Mapping[str, IngestEntry],
                    order: list[str]) -> dict[str, dict[str, Usage]]:
    """system -> meter row -> usage, the ingest (keyed `system/conversation`, or bare for the only
    system) and every question's calls added up, systems in the selected order."""
    from ..llm.meter import add_usage

    out: dict[str, dict[str, Usage]] = {name: {} for name in order}
    for key, info in ingest.items():
        system = key.split("/", 1)[0] if "/" in key else (order[0] if order else "graphrag")
        add_usage(out.setdefault(system, {}), info.usage)
    for question in questions:
        system = question.system or (order[0] if order else "graphrag")
        add_usage(out.setdefault(system, {}), question.usage)
    return {name: rows for name, rows in out.items() if rows}


def with_aggregates(record: RunRecord) -> RunRecord:
    """A copy of ``record`` with its abilities and overall (and each system's cells, the ingest cost
    kept) computed from its questions: for a record whose questions were scored again."""
    from .aggregate import aggregate
    from .leaderboard import leaderboard
    from .system_stats import system_stats

    abilities, overall = aggregate(record.primary_questions())
    update: dict[str, object] = {"abilities": abilities, "overall": overall}
    if record.systems:
        fresh = system_stats(record.questions, list(record.systems),
                             [n for n, s in record.systems.items() if s.measurement_aid])
        for name, stats in fresh.items():
            old = record.systems.get(name)
            if old is not None:
                stats.ingest_calls, stats.ingest_tokens = old.ingest_calls, old.ingest_tokens
        update["systems"] = fresh
        from .leaderboard import leaderboard

        update["leaderboard"] = leaderboard(fresh, record.usage_by_system, record.questions)
    return record.model_copy(update=update)


def write_run(run_dir: Path, record: RunRecord, *, html: bool, target: Path | None = None,
              not_written: list[str] | None = None) -> Path:
    """The record and the merged trace of the run whose parts are in ``run_dir``, written into
    ``target`` (default: ``run_dir``); the per-process trace parts are removed once both are
    written. Returns the record's path. What the disk refuses before the record is written
    raises; what it refuses after (the results folder's NOTICE and pointer, the HTML page) goes
    into ``not_written``, as does a trace line a killed process left cut short."""
    from .record_files import write_record

    not_written = [] if not_written is None else not_written
    target = run_dir if target is None else target
    target.mkdir(parents=True, exist_ok=True)
    path = write_record(target, record, _trace_lines(run_dir, not_written), not_written)
    for part in run_dir.glob("trace-*.jsonl"):
        with contextlib.suppress(OSError):  # a folder turned read-only keeps them: they are in the trace file
            part.unlink()
    if html:
        from ..files import write_error_text
        from .html import write_html

        try:
            write_html(target, record)
        except OSError as exc:
            not_written.append(f"the HTML page in {target}: {write_error_text(exc, target)}")
    return path


def _trace_lines(run_dir: Path, not_written: list[str]) -> Iterator[TraceLine]:
    for part in sorted(run_dir.glob("trace-*.jsonl")):
        torn = 0
        with part.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    try:
                        yield json.loads(line)
                    except ValueError:  # the last line of a process killed while writing it
                        torn += 1
        if torn:
            not_written.append(f"{torn} trace line{'s' if torn > 1 else ''} of {part.name} cut short (its process "
                               "was killed while writing)")


def _conversation_of(question: QuestionRecord) -> str:
    """A result's conversation: its ``conversation_id``, else the one its question id names."""
    from ..data.ids import parse_question_id

    if question.conversation_id:
        return question.conversation_id
    parsed = parse_question_id(question.id)
    return parsed.conversation if parsed is not None else question.id

"""Shards' records joined into one record, as if one machine had run the whole run (`pytest-beam merge`).

A run split with --beam-shard=K/N leaves one record per shard, each with its share's questions,
ingests and usage, and the whole run's selection (`ShardInfo.run_questions`). Merging checks that
the records are shards of one run (the same commit, data revision, scoring profile, question
selection and the settings that shape requests or scores; a difference is named, and nothing is
merged), takes every question once, adds up what was spent, and computes the means and their
intervals over all the conversations again, so the merged record reads as one run's: `report`,
the HTML page and `rejudge` work on it. A question no record holds is named, and the record is
partial. A question that errored in one record and has a verdict in a later one (a shard run
again with --lf) is taken from the later; a question with a verdict in two records keeps the
first (a merge never picks the better of two scores), and both cases are said.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..llm.meter import Usage
    from .question_record import NotRunQuestion, QuestionRecord
    from .schema import EndpointLimit, IngestEntry, RunRecord

VERDICTS = ("passed", "failed", "xfailed", "xpassed")
# Settings that shape a run's requests, its questions or its scores, beside those a cassette records:
# shards that differ in one of them are not one run. Where a shard keeps its files, how it reaches
# its services and its own caps may differ.
SHAPING = ("tier", "system", "context_tokens", "retrieval_k", "agent_timeout")


class MergeError(ValueError):
    """The records cannot be joined into one run's record; the message names what differs."""


@dataclass
class Merged:
    record: RunRecord
    notes: list[str] = field(default_factory=list)  # what the merge decided, one line each
    missing: list[str] = field(default_factory=list)  # the run's items no record holds


def compared_settings() -> tuple[str, ...]:
    from ..settings import QUESTION_SET, RECORDED_SETTINGS

    return (*RECORDED_SETTINGS, *QUESTION_SET, *SHAPING)


def check_one_run(named: Sequence[tuple[str, RunRecord]]) -> None:
    """Raise MergeError naming the first way the records are not shards of one run."""
    first_name, first = named[0]
    for name, record in named:
        if record.shard is None:
            raise MergeError(f"{name} holds a run that was not split (no --beam-shard): nothing to merge it with")
    for name, record in named[1:]:
        def differ(what: str, a: object, b: object, name: str = name) -> MergeError:
            return MergeError(f"{name} is not a shard of the same run as {first_name}: {what} is {b!r} there "
                              f"and {a!r} in {first_name}")

        for what, a, b in (("the commit", first.commit, record.commit),
                           ("the data revision", first.data_revision, record.data_revision),
                           ("the scoring profile", first.profile, record.profile),
                           ("the scoring prompts", first.scoring.prompt_sha256 if first.scoring else None,
                            record.scoring.prompt_sha256 if record.scoring else None),
                           ("the models", first.models, record.models),
                           ("the shard count", first.shard.count if first.shard else None,
                            record.shard.count if record.shard else None),
                           ("the shards' conversations", first.shard.assignment if first.shard else None,
                            record.shard.assignment if record.shard else None)):
            if a != b:
                raise differ(what, a, b)
        for key in compared_settings():
            a, b = first.settings.get(key), record.settings.get(key)
            if a != b:
                raise differ(f"--beam-{key.replace('_', '-')}", a, b)
    by_shard: dict[int, tuple[str, list[str]]] = {}
    for name, record in named:
        assert record.shard is not None
        run = record.shard.run_questions
        earlier = by_shard.get(record.shard.index)
        if earlier is None:
            by_shard[record.shard.index] = (name, run)
        elif not set(run) <= set(earlier[1]):  # a later run of the shard asks part of what the first asked
            raise MergeError(f"{name} runs shard {record.shard.index} again with questions its first run "
                             f"({earlier[0]}) did not select: {', '.join(sorted(set(run) - set(earlier[1]))[:5])}")
    (first_shard, (shard_name, selection)), *others = sorted(by_shard.items())
    for index, (name, run) in others:
        if run != selection:
            extra = sorted(set(run) ^ set(selection))
            raise MergeError(f"{name} (shard {index}) selected other questions than {shard_name} "
                             f"(shard {first_shard}), e.g. {', '.join(extra[:3]) or 'in another order'}: "
                             "the shards must share -k, -m and the set")


def merge_records(named: Sequence[tuple[str, RunRecord]], run_id: str) -> Merged:
    """One record, ``run_id``, of the run the shards' records make up (``named``: what each is
    called, and the record)."""
    if not named:
        raise MergeError("no record to merge")
    named = sorted(named, key=lambda pair: ((pair[1].started or ""), pair[1].run_id))
    check_one_run(named)
    first = named[0][1]
    assert first.shard is not None
    wanted = _run_questions(named)
    notes: list[str] = []
    chosen: dict[str, tuple[str, QuestionRecord]] = {}
    for name, record in named:
        for question in record.questions:
            key = _item_key(question, wanted)
            before = chosen.get(key)
            if before is None:
                chosen[key] = (name, question)
            elif question.outcome in VERDICTS and before[1].outcome not in VERDICTS:
                chosen[key] = (name, question)
                notes.append(f"{key}: taken from {name} ({before[1].outcome} in {before[0]})")
            elif question.outcome in VERDICTS:
                notes.append(f"{key}: kept from {before[0]}, where it has its first verdict; {name}'s is not taken")
            elif before[1].outcome not in VERDICTS:
                chosen[key] = (name, question)  # no verdict in either: the later word on why
    order = {key: n for n, key in enumerate(wanted)}
    keys = sorted(chosen, key=lambda k: (order.get(k, len(order)), k))
    questions = [chosen[k][1] for k in keys]
    missing = [key for key in wanted if key not in chosen]
    present = {r.shard.index for _, r in named if r.shard is not None}
    absent = [n for n in range(1, first.shard.count + 1) if n not in present and first.shard.assignment[n - 1]]
    record = _joined(named, questions, missing, absent).model_copy(update={
        "run_id": run_id, "not_run": _not_run(named, missing, absent), "selected_questions": len(wanted)})
    return Merged(record, notes, missing)


def _not_run(named: Sequence[tuple[str, RunRecord]], missing: list[str], absent: list[int]) -> list[NotRunQuestion]:
    """Each of the run's items no record holds a result for, with why: its shard's own reason
    (a shard record names every question it selected and did not run), else its shard's absence."""
    from ..data.ids import parse_item_id
    from .question_record import NotRunQuestion

    said: dict[str, NotRunQuestion] = {}
    for name, record in named:
        for entry in record.not_run:
            key = f"{entry.system}-{entry.id}" if f"{entry.system}-{entry.id}" in missing else entry.id
            said[key] = entry.model_copy(update={"reason": f"{entry.reason} ({name})"})
    out = []
    for key in missing:
        if key in said:
            out.append(said[key])
            continue
        item = parse_item_id(key)
        why = (f"no record holds it: shard{'s' if len(absent) > 1 else ''} {', '.join(map(str, absent))} absent"
               if absent else "no record holds it")
        out.append(NotRunQuestion(id=str(item.question) if item else key, system=item.system if item else None,
                                  reason=why, conversation_id=item.question.conversation if item else "",
                                  ability=item.question.ability if item else ""))
    return out


def _run_questions(named: Sequence[tuple[str, RunRecord]]) -> list[str]:
    """The whole run's items, as the first record of the first shard selected them."""
    firsts = {}
    for _, record in named:
        if record.shard is not None and record.shard.index not in firsts:
            firsts[record.shard.index] = record.shard.run_questions
    return firsts[min(firsts)]


def _item_key(question: QuestionRecord, wanted: Iterable[str]) -> str:
    """The item id the run knew the question by: ``system-id`` when systems are compared, else its id."""
    system_key = f"{question.system}-{question.id}"
    return system_key if question.system and system_key in set(wanted) else question.id


def _joined(named: Sequence[tuple[str, RunRecord]], questions: list[QuestionRecord], missing: list[str],
            absent: list[int]) -> RunRecord:
    from ..llm.meter import add_usage
    from ..system_registry import MEASUREMENT_AIDS
    from .aggregate import aggregate
    from .system_stats import system_stats

    records = [r for _, r in named]
    first, last = records[0], records[-1]
    usage: dict[str, Usage] = {}
    by_system: dict[str, dict[str, Usage]] = {}
    relay: dict[str, dict[str, int]] = {}
    seconds: dict[str, float] = {}
    graph: dict[str, IngestEntry] = {}
    for record in records:
        add_usage(usage, record.usage)
        for system, rows in record.usage_by_system.items():
            add_usage(by_system.setdefault(system, {}), rows)
        for system, counts in record.relay.items():
            row = relay.setdefault(system, {})
            for key, value in counts.items():
                row[key] = row.get(key, 0) + value
        for phase, took in record.phase_seconds.items():
            seconds[phase] = seconds.get(phase, 0.0) + took
        for key, entry in record.graph.items():
            if key not in graph or entry.failed is None:  # a finished ingest wins over a failed one
                graph[key] = entry
    order = list(first.systems) or ([first.system] if first.system else [])
    several = len(order) > 1
    primary = [q for q in questions if not several or q.system == order[0]]
    abilities, overall = aggregate(primary)
    reasons = [f"shard {n}/{first.shard.count if first.shard else '?'} absent" for n in absent]
    if missing:
        reasons.append(f"{len(missing)} of the run's {len(missing) + len(questions)} items have no result")
    reasons += [f"{_shard_name(r)}: {r.partial_reason}" for r in records if r.partial and r.partial_reason]
    statuses = [r.exit_status for r in records if r.exit_status]
    from .leaderboard import leaderboard

    compared = system_stats(questions, order, MEASUREMENT_AIDS, graph) if several else {}
    return first.model_copy(update={
        "started": min(r.started or "" for r in records) or None,
        "finished": max(r.finished or "" for r in records) or None,
        "settings": {**first.settings, "shard": None}, "shard": None,
        "merged_from": [r.run_id for r in records],
        "questions": questions, "abilities": abilities, "overall": overall,
        "systems": compared, "leaderboard": leaderboard(compared, by_system, questions),
        "usage": usage, "usage_by_system": by_system, "relay": relay, "phase_seconds": seconds, "graph": graph,
        # the shards' clocks and start times are their own: a phase's wall time over all of them is not known
        "phase_wall_seconds": {},
        "write_faults": [f"{_shard_name(r)}: {fault}" for r in records for fault in r.write_faults],
        "endpoint_limits": _limits(records),
        "snapshot_changes": sorted({c for r in records for c in r.snapshot_changes}),
        "missing_conversations": sorted({c for r in records for c in r.missing_conversations}),
        "partial": bool(reasons), "partial_reason": "; ".join(reasons) or None,
        "exit_status": statuses[0] if statuses else last.exit_status,
        "judge_check": None,
        "judge_check_error": ("each shard judged its own questions: see the shards' records"
                              if any(r.judge_check is not None for r in records) else None),
        "rejudged_from": None,
    })


def _shard_name(record: RunRecord) -> str:
    return f"shard {record.shard.index}/{record.shard.count}" if record.shard else record.run_id


def _limits(records: Sequence[RunRecord]) -> list[EndpointLimit]:
    """Each endpoint's limits, every process of every shard named by its shard."""
    rows: dict[tuple[str, int], EndpointLimit] = {}
    for record in records:
        for limit in record.endpoint_limits:
            row = rows.get((limit.endpoint, limit.ceiling))
            if row is None:
                row = rows[(limit.endpoint, limit.ceiling)] = limit.model_copy(
                    update={"settled": {}, "throttled": 0, "timeouts": 0})
            row.settled.update({f"{_shard_name(record)} {p}": n for p, n in limit.settled.items()})
            row.lowest = min(row.lowest, limit.lowest)
            row.throttled += limit.throttled
            row.timeouts += limit.timeouts
    return list(rows.values())


def write_merged(merged: Merged, out: Path, sources: Sequence[Path], *, html: bool = False) -> Path:
    """The merged record, with the shards' traces joined, in ``out/<run id>``; its record.json's path."""
    from .record_files import iter_trace, write_record

    def traces() -> Iterable[dict[str, object]]:
        for source in sources:
            if (source / "trace.jsonl.gz").exists():
                yield from iter_trace(source)

    path = write_record(out / merged.record.run_id, merged.record, traces())
    if html:
        from .html import write_html

        write_html(path.parent, merged.record)
    return path

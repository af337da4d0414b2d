"""Plain-text tables of a run record (the terminal summary and ``pytest-beam report``).

Everything here returns lines without a trailing newline; no colours, monospace alignment only.
The comparison of two records is in :mod:`.comparison_text`; the shared formatting in :mod:`.text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..llm.meter import Usage
from .aggregate import percentile
from .compare import changed_questions, comparison_warnings
from .comparison_text import render_comparison
from .question_record import RERUN_FLAG
from .schema import RunRecord
from .text import (
    JUDGE_IS_AGENT_WARNING,
    USAGE_HEADERS,
    agent_calls_text,
    flags_text,
    fmt_delta,
    fmt_interval,
    fmt_score,
    fmt_seconds,
    graph_rows,
    ordered_roles,
    phase_key,
    phase_time_lines,
    requests_line,
    score_delta,
    section,
    table,
    usage_rows,
)

__all__ = [
    "JUDGE_IS_AGENT_WARNING",
    "render_summary",
    "render_comparison",
    "render_listing",
    "table",
    "fmt_score",
    "fmt_delta",
    "score_delta",
    "fmt_seconds",
    "graph_rows",
    "ordered_roles",
    "phase_key",
    "usage_rows",
    "comparison_warnings",
    "changed_questions",
]

# ----------------------------------------------------------------------------- one record

def _ability_rows(record: RunRecord) -> list[list[object]]:  # cells, str()-ed by table()
    rows = []
    for ability, s in record.abilities.items():
        rows.append([
            ability, s.n, fmt_score(s.mean), fmt_interval(s.interval), fmt_score(s.mean_excluding_known_bad),
            s.passed, s.failed, s.errors, s.skipped, flags_text(s.flags),
        ])
    o = record.overall
    rows.append(["overall", o.n, fmt_score(o.mean), fmt_interval(o.interval), fmt_score(o.mean_excluding_known_bad),
                 sum(s.passed for s in record.abilities.values()),
                 sum(s.failed for s in record.abilities.values()), o.errors, o.skipped,
                 flags_text(_sum_flags(record.abilities.values()))])
    return rows


def _sum_flags(stats: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in stats:
        for k, v in s.flags.items():
            out[k] = out.get(k, 0) + v
    return out


def _header_lines(record: RunRecord) -> list[str]:
    bits = [f"run {record.run_id}"]
    if record.started:
        bits.append(f"started {record.started}")
    facts = []
    if record.label:
        bits.append(f"label {record.label}")
    if record.system:
        bits.append(f"system {record.system}")
    line1 = ", ".join(bits)
    for label, value in (("mode", record.mode), ("tier", record.tier if record.tier != "100K" else None),
                         ("scorer", record.profile), ("data", record.data_source),
                         ("revision", record.data_revision), ("pass score", record.pass_score)):
        if value not in (None, ""):
            facts.append(f"{label} {value}")
    if record.commit:
        facts.append(f"commit {record.commit[:12]}{' (dirty)' if record.dirty else ''}")
    out = [line1]
    if facts:
        out.append(", ".join(facts))
    if record.rejudged_from:
        out.append(f"re-judged the answers of run {record.rejudged_from} (no ingest, no agent call)")
    if record.missing_conversations:
        out.append(f"left out: {len(record.missing_conversations)} conversations of the set whose chats the data "
                   f"lacks ({', '.join(record.missing_conversations)}); the means cover the others")
    return out


def _gaps(record: RunRecord) -> list[str]:
    """The selected questions that did not run, by reason, and the ones run again after a worker crashed."""
    out = []
    by_reason: dict[str, list[str]] = {}
    for missing in record.not_run:
        by_reason.setdefault(missing.reason, []).append(
            f"{missing.system}-{missing.id}" if record.systems else missing.id)
    for reason, ids in by_reason.items():
        shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
        out.append(f"not run: {len(ids)} question{'s' if len(ids) > 1 else ''} ({reason}): {shown}")
    for q in record.questions:
        if q.crashed_attempt_usage:
            crashed = sum(q.crashed_attempt_usage.values(), Usage())
            out.append(f"run again after its worker crashed: {q.id} (the crashed attempt's {crashed.calls} calls, "
                       f"{crashed.abandoned} abandoned, {crashed.tokens:,} tokens are in its usage; "
                       f"flag {RERUN_FLAG})")
    return out


def render_summary(record: RunRecord) -> list[str]:
    """The run's tables: abilities, overall, models, cost and time, agent calls, graph, changes."""
    out: list[str] = [section("BEAM results")]
    out += _header_lines(record)
    if record.partial:
        reason = f": {record.partial_reason}" if record.partial_reason else ""
        out.append(f"WARNING: partial run{reason}; the means cover only the questions that ran")
    out += _gaps(record)
    if record.judge_is_agent:
        out.append(f"WARNING: {JUDGE_IS_AGENT_WARNING}")
    out.append("")

    if len(record.systems) > 1:
        from .systems_text import render_side_by_side

        out += render_side_by_side(record.systems)
        out.append("errors and skips are counted apart, never as 0")
        if record.leaderboard:
            from .systems_text import render_leaderboard

            out += ["", *render_leaderboard(record.leaderboard)]
        iv = next((s.overall.interval for s in record.systems.values() if s.overall.interval), None)
        if iv is not None:
            out.append(f"intervals: {iv.level:.0%} cluster bootstrap over {iv.clusters} conversation(s), "
                       f"{iv.resamples:,} resamples, seed {iv.seed}")
    elif record.abilities:
        out += table(
            ["ability", "n", "mean", "95% interval", "mean excl. known-bad", "passed", "failed", "errors", "skipped",
             "flags"],
            _ability_rows(record), align="lrrrrrrrrl",
        )
        o = record.overall
        if o.mean_of_abilities is not None and len(record.abilities) > 1:
            out.append("(overall mean is over questions; the mean of ability means is "
                       f"{fmt_score(o.mean_of_abilities)})")
        out.append("errors and skips are counted apart, never as 0")
        if o.interval is not None:
            out.append(f"intervals: {o.interval.level:.0%} cluster bootstrap over {o.interval.clusters} "
                       f"conversation(s), {o.interval.resamples:,} resamples, seed {o.interval.seed}")
        if o.judge_agreement is not None:
            runs = record.scoring.judge_runs if record.scoring else None
            out.append(f"judge agreement: {o.judge_agreement:.1%} of rubric items (and event-ordering lines) "
                       "got the same verdict in every repeat" + (f" ({runs} judge runs)" if runs else ""))
        if o.context_tokens_mean is not None:
            out.append(f"context tokens per question: mean {o.context_tokens_mean:,.0f}, "
                       f"p95 {o.context_tokens_p95:,.0f}")
    elif record.judge_check is None:
        out.append("no questions in this record")

    if record.models:
        out.append("")
        out.append("models by role:")
        out += table(["role", "model"], [[r, record.models[r] or "-"] for r in ordered_roles(record.models)],
                     align="ll", indent="  ")

    if record.usage or record.phase_seconds:
        out.append("")
        out.append("cost and time by phase:")
        if record.usage:
            out += table(USAGE_HEADERS, usage_rows(record.usage), indent="  ")
            if requests := requests_line(record.usage):
                out.append(f"  {requests}")
        out += [f"  {label}: {text}" for label, text in phase_time_lines(record)]
    out += [f"  {line}" for line in limit_lines(record)]
    if record.usage_by_system:
        from .systems_text import render_usage_by_system

        out += ["", *render_usage_by_system(record.usage_by_system, record.relay)]

    ran = [q for q in record.questions if q.outcome != "skipped"]
    if calls_text := agent_calls_text(ran):
        out.append("")
        out.append(f"agent calls per question: {calls_text}")
        prompts = [q.usage["agent"].prompt_tokens for q in ran if "agent" in q.usage and q.usage["agent"].calls]
        if prompts:  # live calls only: a cassette or cache records what a call cost, not what it was sent
            out.append(f"agent prompt tokens per question: mean {sum(prompts) / len(prompts):,.0f}, "
                       f"p95 {percentile(prompts, 0.95):,.0f} ({len(prompts)} questions, live calls)")

    if record.graph:
        out.append("")
        out.append("graph per conversation:")
        out += table(["conversation", "entities", "relations", "chunks", "empty extr.", "seconds"],
                     graph_rows(record.graph), indent="  ")

    if record.snapshot_changes:
        out.append("")
        out.append(f"answers changed from their snapshots ({len(record.snapshot_changes)}):")
        out += [f"  {qid}" for qid in record.snapshot_changes]

    if record.judge_check is not None:
        from .calibration_table import render_judge_check

        out.append("")
        out += render_judge_check(record.judge_check)
    if record.judge_check_error:
        out.append("")
        out.append(f"WARNING: the judge check did not finish: {record.judge_check_error}")
    return out


# ----------------------------------------------------------------------------- listing

def render_listing(entries: Sequence[Any]) -> list[str]:
    """One line per record (``entries`` from :func:`record.list_records`)."""
    rows = []
    for entry in entries:
        r = entry.record
        if r is None:
            rows.append([entry.path.parent.name, "-", "-", "-", "-", "-", f"unreadable: {entry.error}"])
            continue
        models = ", ".join(sorted({m for m in r.models.values() if m})) or "-"
        note = "partial" if r.partial else ""
        rows.append([r.run_id, (r.started or "-")[:19], r.mode or "-", models, fmt_score(r.overall.mean),
                     r.overall.n, note])
    if not rows:
        return ["no records"]
    return table(["run", "started", "mode", "models", "overall", "n", ""], rows, align="lllllrl")


def limit_lines(record: RunRecord) -> list[str]:
    """One line per endpoint called live: the requests in flight per process its adaptive limit
    settled at (the ceiling where nothing pushed it down), and how often it said it was overloaded."""
    out = []
    for row in record.endpoint_limits:
        settled = sorted(set(row.settled.values()))
        where = (f"{settled[0]}" if len(settled) == 1
                 else ", ".join(f"{p} {n}" for p, n in sorted(row.settled.items())))
        out.append(f"requests in flight to {row.endpoint}: settled at {where} of a ceiling of {row.ceiling} "
                   f"(--beam-concurrency; lowest {row.lowest}); {row.throttled:,} replies 429 or 503, "
                   f"{row.timeouts:,} timeouts")
    return out

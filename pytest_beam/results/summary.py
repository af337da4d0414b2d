"""Plain-text tables of a run record (the terminal summary and ``pytest-beam report``).

Everything here returns lines without a trailing newline; no colours, monospace alignment only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .record import ROLES, AbilityStats, QuestionRecord, RunRecord, UsageRow

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

JUDGE_IS_AGENT_WARNING = "the judge is the agent's model: scores are biased upward"

# Phases/roles in the order they happen; anything else follows alphabetically.
_PHASE_ORDER = ("extraction", "resolution", "ingest", "embedding", "agent", "judge")


def fmt_score(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def score_delta(a: float | None, b: float | None) -> float | None:
    """``b - a`` rounded to 6 places (so 0.75 - 0.5 is exactly 0.25), None if either is missing."""
    if a is None or b is None:
        return None
    return round(b - a, 6)


def fmt_delta(delta: float | None, digits: int = 3) -> str:
    if delta is None:
        return "-"
    text = f"{delta:+.{digits}f}"
    return f"{0.0:+.{digits}f}" if float(text) == 0 else text


def _int(n: int) -> str:
    return f"{n:,}"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None, indent: str = "") -> list[str]:
    """Aligned columns. ``align`` has one char per column, ``l`` or ``r`` (default: first left,
    the rest right)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    ncols = len(headers)
    align = align or ("l" + "r" * (ncols - 1))
    widths = [max(len(r[i]) for r in cells) for i in range(ncols)]
    out = []
    for k, row in enumerate(cells):
        parts = [row[i].ljust(widths[i]) if align[i] == "l" else row[i].rjust(widths[i]) for i in range(ncols)]
        out.append((indent + "  ".join(parts)).rstrip())
        if k == 0:
            out.append(indent + "  ".join("-" * w for w in widths))
    return out


def _section(title: str, width: int = 72) -> str:
    title = f" {title} "
    left = (width - len(title)) // 2
    return "-" * left + title + "-" * (width - left - len(title))


def _flags_text(flags: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(flags.items())) or ""


def phase_key(name: str) -> tuple[int, str]:
    return (_PHASE_ORDER.index(name) if name in _PHASE_ORDER else len(_PHASE_ORDER), name)


def ordered_roles(models: dict[str, Any]) -> list[str]:
    known = [r for r in ROLES if r in models]
    return known + sorted(r for r in models if r not in ROLES)


# ----------------------------------------------------------------------------- one record

def _ability_rows(record: RunRecord) -> list[list[str]]:
    rows = []
    for ability, s in record.abilities.items():
        rows.append([
            ability, s.n, fmt_score(s.mean), fmt_score(s.mean_excluding_known_bad),
            s.passed, s.failed, s.errors, s.skipped, _flags_text(s.flags),
        ])
    o = record.overall
    rows.append(["overall", o.n, fmt_score(o.mean), fmt_score(o.mean_excluding_known_bad),
                 sum(s.passed for s in record.abilities.values()),
                 sum(s.failed for s in record.abilities.values()), o.errors, o.skipped,
                 _flags_text(_sum_flags(record.abilities.values()))])
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
    line1 = ", ".join(bits)
    facts = []
    for label, value in (("mode", record.mode), ("scorer", record.scorer), ("data", record.data_source),
                         ("revision", record.data_revision), ("pass score", record.pass_score)):
        if value not in (None, ""):
            facts.append(f"{label} {value}")
    if record.commit:
        facts.append(f"commit {record.commit[:12]}{' (dirty)' if record.dirty else ''}")
    out = [line1]
    if facts:
        out.append(", ".join(facts))
    return out


def usage_rows(usage: dict[str, UsageRow]) -> list[list[str]]:
    rows = []
    total = UsageRow()
    for name in sorted(usage, key=phase_key):
        u = usage[name]
        total = total + u
        rows.append([name, _int(u.calls), _int(u.cached_calls + u.replayed_calls), _int(u.cached_tokens),
                     _int(u.prompt_tokens), _int(u.completion_tokens), f"{u.seconds:.1f}"])
    if len(rows) > 1:
        rows.append(["total", _int(total.calls), _int(total.cached_calls + total.replayed_calls),
                     _int(total.cached_tokens), _int(total.prompt_tokens), _int(total.completion_tokens),
                     f"{total.seconds:.1f}"])
    return rows


def graph_rows(graph: dict[str, dict[str, Any]]) -> list[list[str]]:
    def count(v: Any) -> int:
        if isinstance(v, dict):
            return sum(int(x) for x in v.values() if isinstance(x, (int, float)))
        return int(v) if isinstance(v, (int, float)) else 0

    rows = []
    for conv in sorted(graph):
        g = graph[conv] or {}
        hit = g.get("cache_hit")
        rows.append([
            conv, _int(count(g.get("entities_by_type"))), _int(count(g.get("relations_by_type"))),
            _int(count(g.get("chunks"))), _int(count(g.get("empty_extractions"))),
            "-" if hit is None else ("yes" if hit else "no"),
            "-" if g.get("seconds") is None else f"{float(g['seconds']):.1f}",
        ])
    return rows


def render_summary(record: RunRecord) -> list[str]:
    """The run's tables: abilities, overall, models, cost and time, agent calls, graph, changes."""
    out: list[str] = [_section("BEAM results")]
    out += _header_lines(record)
    if record.partial:
        reason = f": {record.partial_reason}" if record.partial_reason else ""
        out.append(f"WARNING: partial run{reason}; the means cover only the questions that ran")
    if record.judge_is_agent:
        out.append(f"WARNING: {JUDGE_IS_AGENT_WARNING}")
    out.append("")

    if record.abilities:
        out += table(
            ["ability", "n", "mean", "mean excl. known-bad", "passed", "failed", "errors", "skipped", "flags"],
            _ability_rows(record), align="lrrrrrrrl",
        )
        o = record.overall
        if o.mean_of_abilities is not None and len(record.abilities) > 1:
            out.append(f"(overall mean is over questions; the mean of ability means is {fmt_score(o.mean_of_abilities)})")
        out.append("errors and skips are counted apart, never as 0")
    else:
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
            out += table(["phase", "calls", "cached/replayed", "their tok", "prompt tok", "completion tok", "call s"],
                         usage_rows(record.usage), indent="  ")
        if record.phase_seconds:
            wall = ", ".join(f"{k} {fmt_seconds(v)}" for k, v in sorted(record.phase_seconds.items(), key=lambda kv: phase_key(kv[0])))
            out.append(f"  wall time: {wall}")

    ran = [q for q in record.questions if q.outcome != "skipped"]
    if ran:
        calls = [q.agent_calls for q in ran]
        out.append("")
        out.append(f"agent calls per question: mean {sum(calls) / len(calls):.1f}, max {max(calls)} ({len(calls)} questions)")

    if record.graph:
        out.append("")
        out.append("graph per conversation:")
        out += table(["conversation", "entities", "relations", "chunks", "empty extr.", "cached", "seconds"],
                     graph_rows(record.graph), indent="  ")

    if record.snapshot_changes:
        out.append("")
        out.append(f"answers changed from their snapshots ({len(record.snapshot_changes)}):")
        out += [f"  {qid}" for qid in record.snapshot_changes]
    return out


# ----------------------------------------------------------------------------- two records

def comparison_warnings(a: RunRecord, b: RunRecord) -> list[str]:
    """Why the two records may not be comparable (models, scorer, mode, data)."""
    warnings = []
    if _norm_models(a.models) != _norm_models(b.models):
        roles = sorted(set(a.models) | set(b.models))
        diffs = [f"{r}: {a.models.get(r) or '-'} -> {b.models.get(r) or '-'}" for r in roles
                 if (a.models.get(r) or None) != (b.models.get(r) or None)]
        warnings.append("the records used different models (" + "; ".join(diffs) + ")")
    if (a.scorer or None) != (b.scorer or None):
        warnings.append(f"the records used different scorers ({a.scorer or '-'} -> {b.scorer or '-'})")
    if (a.mode or None) != (b.mode or None):
        warnings.append(f"the records ran different modes ({a.mode or '-'} -> {b.mode or '-'})")
    if (a.data_revision or None) != (b.data_revision or None):
        warnings.append(f"the records used different data revisions ({a.data_revision or '-'} -> {b.data_revision or '-'})")
    return warnings


def _norm_models(models: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in models.items() if v}


def changed_questions(a: RunRecord, b: RunRecord) -> list[tuple[str, QuestionRecord | None, QuestionRecord | None]]:
    """Questions whose score, outcome or answer differs between the two records (or that only one has)."""
    qa = {q.id: q for q in a.questions}
    qb = {q.id: q for q in b.questions}
    order = [q.id for q in a.questions] + [q.id for q in b.questions if q.id not in qa]
    out = []
    for qid in order:
        x, y = qa.get(qid), qb.get(qid)
        if x is None or y is None:
            out.append((qid, x, y))
        elif x.score != y.score or (x.answer or "") != (y.answer or "") or x.outcome != y.outcome:
            out.append((qid, x, y))
    return out


def _what_changed(x: QuestionRecord | None, y: QuestionRecord | None) -> str:
    if x is None:
        return "only in B"
    if y is None:
        return "only in A"
    bits = []
    if x.score != y.score:
        bits.append("score")
    if (x.answer or "") != (y.answer or ""):
        bits.append("answer")
    if x.outcome != y.outcome:
        bits.append(f"outcome {x.outcome}->{y.outcome}")
    return ", ".join(bits)


def render_comparison(a: RunRecord, b: RunRecord) -> list[str]:
    """A (the baseline) and B side by side; every delta is B - A."""
    out = [_section("BEAM comparison")]
    out.append(f"A: {a.run_id}" + (f" ({a.started})" if a.started else ""))
    out.append(f"B: {b.run_id}" + (f" ({b.started})" if b.started else ""))
    for w in comparison_warnings(a, b):
        out.append(f"WARNING: {w}")
    for label, r in (("A", a), ("B", b)):
        if r.partial:
            out.append(f"WARNING: {label} is a partial run" + (f": {r.partial_reason}" if r.partial_reason else ""))
        if r.judge_is_agent:
            out.append(f"WARNING: {label}: {JUDGE_IS_AGENT_WARNING}")
    out.append("")

    rows = []
    empty = AbilityStats()
    for ability in sorted(set(a.abilities) | set(b.abilities)):
        sa, sb = a.abilities.get(ability, empty), b.abilities.get(ability, empty)
        rows.append([
            ability, sa.n, fmt_score(sa.mean), sb.n, fmt_score(sb.mean), fmt_delta(score_delta(sa.mean, sb.mean)),
            fmt_delta(score_delta(sa.mean_excluding_known_bad, sb.mean_excluding_known_bad)),
        ])
    oa, ob = a.overall, b.overall
    rows.append(["overall", oa.n, fmt_score(oa.mean), ob.n, fmt_score(ob.mean), fmt_delta(score_delta(oa.mean, ob.mean)),
                 fmt_delta(score_delta(oa.mean_excluding_known_bad, ob.mean_excluding_known_bad))])
    out += table(["ability", "n A", "mean A", "n B", "mean B", "delta", "delta excl. known-bad"], rows)

    models = sorted(set(a.models) | set(b.models), key=lambda r: (ROLES.index(r) if r in ROLES else 99, r))
    if models:
        out.append("")
        out.append("models by role:")
        out += table(["role", "A", "B"], [[r, a.models.get(r) or "-", b.models.get(r) or "-"] for r in models],
                     align="lll", indent="  ")

    if a.usage or b.usage:
        ua, ub = _total(a.usage), _total(b.usage)
        out.append("")
        out.append(
            f"model calls: A {_int(ua.calls)} ({_int(ua.tokens)} tokens), B {_int(ub.calls)} ({_int(ub.tokens)} tokens)"
        )

    changed = changed_questions(a, b)
    out.append("")
    if changed:
        out.append(f"questions whose score or answer changed ({len(changed)}):")
        out += table(
            ["question", "score A", "score B", "delta", "changed"],
            [[qid, fmt_score(x.score if x else None), fmt_score(y.score if y else None),
              fmt_delta(score_delta(x.score if x else None, y.score if y else None)), _what_changed(x, y)]
             for qid, x, y in changed],
            align="lrrrl", indent="  ",
        )
    else:
        out.append("no question changed score or answer")
    return out


def _total(usage: dict[str, UsageRow]) -> UsageRow:
    total = UsageRow()
    for u in usage.values():
        total = total + u
    return total


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

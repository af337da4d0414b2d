"""Formatting shared by the terminal tables and the HTML page: numbers, deltas, intervals, tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..llm.meter import Usage
from .schema import ROLES, IngestEntry
from .stats import MeanInterval

__all__ = [
    "JUDGE_IS_AGENT_WARNING", "table", "section", "fmt_score", "fmt_delta", "fmt_int", "fmt_interval",
    "score_delta", "fmt_seconds", "graph_rows", "ordered_roles", "phase_key", "usage_rows", "USAGE_HEADERS",
    "total_usage", "flags_text", "requests_line",
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


def fmt_int(n: int) -> str:
    return f"{n:,}"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None,
          indent: str = "") -> list[str]:
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


def section(title: str, width: int = 72) -> str:
    title = f" {title} "
    left = (width - len(title)) // 2
    return "-" * left + title + "-" * (width - left - len(title))


def flags_text(flags: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(flags.items())) or ""


def phase_key(name: str) -> tuple[int, str]:
    return (_PHASE_ORDER.index(name) if name in _PHASE_ORDER else len(_PHASE_ORDER), name)


def ordered_roles(models: Mapping[str, object]) -> list[str]:
    known = [r for r in ROLES if r in models]
    return known + sorted(r for r in models if r not in ROLES)



def fmt_interval(iv: MeanInterval | None, digits: int = 3) -> str:
    """``[low, high]`` of a mean's interval; "-" when there is none."""
    if iv is None:
        return "-"
    return f"[{iv.low:.{digits}f}, {iv.high:.{digits}f}]"


#: The columns of :func:`usage_rows`, one header per cell.
USAGE_HEADERS = ("phase", "calls", "cached/replayed", "their tok", "prompt tok", "completion tok", "call s")


def requests_line(usage: dict[str, Usage]) -> str | None:
    """What the endpoint was sent, when it was more than one request per answered call: retries,
    calls that failed for good, calls abandoned in flight (None when there were none)."""
    total = total_usage(usage)
    if not (total.retries or total.errors or total.abandoned):
        return None
    parts = [f"{fmt_int(total.calls)} calls", f"{fmt_int(total.retries)} retries"]
    if total.abandoned:
        parts.append(f"{fmt_int(total.abandoned)} abandoned in flight (tokens unknown)")
    line = f"requests sent: {fmt_int(total.calls + total.retries + total.abandoned)} = " + " + ".join(parts)
    if total.errors:
        line += f"; {fmt_int(total.errors)} call{'s' if total.errors != 1 else ''} failed for good"
    return line


def usage_rows(usage: dict[str, Usage]) -> list[list[str]]:
    rows = []
    total = Usage()
    for name in sorted(usage, key=phase_key):
        u = usage[name]
        total = total + u
        rows.append([name, fmt_int(u.calls), fmt_int(u.cached_calls + u.replayed_calls), fmt_int(u.cached_tokens),
                     fmt_int(u.prompt_tokens), fmt_int(u.completion_tokens), f"{u.seconds:.1f}"])
    if len(rows) > 1:
        rows.append(["total", fmt_int(total.calls), fmt_int(total.cached_calls + total.replayed_calls),
                     fmt_int(total.cached_tokens), fmt_int(total.prompt_tokens), fmt_int(total.completion_tokens),
                     f"{total.seconds:.1f}"])
    return rows


def graph_rows(graph: Mapping[str, IngestEntry]) -> list[list[str]]:
    def count(counts: Mapping[str, int] | None) -> int:
        return sum(counts.values()) if counts else 0

    rows = []
    for conv in sorted(graph):
        g = graph[conv]
        if g.failed:  # an ingest that did not finish: its time, no graph
            rows.append([f"{conv} (failed)", "-", "-", "-", "-", f"{g.seconds:.1f}"])
            continue
        rows.append([conv, fmt_int(count(g.entities_by_type)), fmt_int(count(g.relations_by_type)),
                     fmt_int(g.chunks or 0), fmt_int(g.empty_extractions or 0), f"{g.seconds:.1f}"])
    return rows


def total_usage(usage: dict[str, Usage]) -> Usage:
    total = Usage()
    for u in usage.values():
        total = total + u
    return total

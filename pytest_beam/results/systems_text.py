"""Several systems side by side as text rows: the terminal's table and the HTML page's.

Rows follow the selected order and are never sorted by score; the ceiling (`gold-evidence`) is
marked as a measurement aid on its row (see `systems.py` for what its gaps mean).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..llm.meter import Usage
from .stats import LeaderboardRow, SystemStats
from .system_stats import AID_MARK, CEILING, display_name, gap, reader_loss
from .text import fmt_delta, fmt_int, fmt_interval, fmt_score, phase_key, table

SIDE_BY_SIDE_HEADERS = ("ability", "system", "n", "mean", "95% interval", "evidence recall", "context tok/q",
                        "calls", "tokens", "lost to retrieval", "lost to reader+judge")


def side_by_side_rows(systems: Mapping[str, SystemStats]) -> list[list[str]]:
    """Rows per ability (then overall), one per system in the selected order, never sorted by score.

    `lost to retrieval` is the ceiling's mean minus the system's; `lost to reader+judge` is 1.0 minus
    the ceiling's, on the ceiling's own row. Without the ceiling both columns are "-".
    """
    abilities = sorted({a for s in systems.values() for a in s.abilities})
    ceiling = systems.get(CEILING)
    rows: list[list[str]] = []
    for ability in [*abilities, "overall"]:
        top = ceiling and (ceiling.overall if ability == "overall" else ceiling.abilities.get(ability))
        for k, (name, stats) in enumerate(systems.items()):
            cell = stats.overall if ability == "overall" else stats.abilities.get(ability)
            if cell is None:
                continue
            aid = stats.measurement_aid
            rows.append([
                ability if k == 0 else "", display_name(name, stats), str(cell.n), fmt_score(cell.mean),
                fmt_interval(cell.interval), fmt_score(cell.evidence_recall),
                "-" if cell.context_tokens is None else f"{cell.context_tokens:,.0f}",
                fmt_int(cell.calls), fmt_int(cell.tokens),
                "-" if aid else fmt_delta(gap(top or None, cell)),
                fmt_delta(reader_loss(cell)) if name == CEILING else "-",
            ])
    return rows


def render_side_by_side(systems: Mapping[str, SystemStats]) -> list[str]:
    """The terminal's table of several systems, with what the columns mean."""
    out = ["systems side by side (same answer and judge models; rows in the selected order, not ranked):"]
    out += table(SIDE_BY_SIDE_HEADERS, side_by_side_rows(systems), align="llrrrrrrrrr")
    if CEILING in systems:
        out.append(f"{CEILING} is a {AID_MARK}: it answers from each question's own source messages, the ceiling a "
                   "perfect retriever would give this reader; never a system to rank")
        out.append("lost to retrieval = gold-evidence mean - system mean; "
                   "lost to reader+judge = 1.0 - gold-evidence mean")
    else:
        out.append(f"add {CEILING} to --beam-system to see what retrieval loses")
    out.append("calls and tokens: live, answering and judging these questions (cached and replayed calls are in "
               "the record's cells apart); ingest per system: "
               + ", ".join(f"{n} {fmt_int(s.ingest_calls)} calls / {fmt_int(s.ingest_tokens)} tok"
                           + (f" ({fmt_int(stored)} cached or replayed)"
                              if (stored := s.ingest_cached_calls + s.ingest_replayed_calls) else "")
                           for n, s in systems.items()))
    return out


USAGE_BY_SYSTEM_HEADERS = ("system", "row", "calls", "cached/replayed", "prompt tok", "completion tok")


def usage_by_system_rows(by_system: Mapping[str, Mapping[str, Usage]]) -> list[list[str]]:
    """One row per (system, meter row), systems in the selected order: a relayed call's row is
    `<system> <role>` (its library's own call through the model relay), the others the harness's roles."""
    rows: list[list[str]] = []
    for system, usage in by_system.items():
        for k, name in enumerate(sorted(usage, key=lambda n: phase_key(n.split(" ", 1)[-1]))):
            u = usage[name]
            rows.append([system if k == 0 else "", name, fmt_int(u.calls), fmt_int(u.cached_calls + u.replayed_calls),
                         fmt_int(u.prompt_tokens), fmt_int(u.completion_tokens)])
    return rows


def relay_lines(relay: Mapping[str, Mapping[str, int]], by_system: Mapping[str, Mapping[str, Usage]]) -> list[str]:
    """What the model relay received per system beside what the meter counted for its rows."""
    out = []
    for system, got in relay.items():
        prefix = f"{system} "
        rows = {n: u for n, u in by_system.get(system, {}).items() if n.startswith(prefix)}
        chat = sum(u.calls + u.cached_calls + u.replayed_calls + u.errors for n, u in rows.items()
                   if not n.endswith(" embedding"))
        out.append(f"  {system}: {fmt_int(got.get('chat', 0))} chat requests received, {fmt_int(chat)} metered "
                   f"(live + cached + replayed + failed); {fmt_int(got.get('embeddings', 0))} embedding requests; "
                   f"{fmt_int(got.get('errors', 0))} answered with an error")
    return out


def render_usage_by_system(by_system: Mapping[str, Mapping[str, Usage]],
                           relay: Mapping[str, Mapping[str, int]]) -> list[str]:
    out = ["cost by system and meter row (a '<system> <role>' row is that system's own call through the model relay):"]
    out += table(USAGE_BY_SYSTEM_HEADERS, usage_by_system_rows(by_system), align="llrrrr", indent="  ")
    if relay:
        out.append("model relay (an OpenAI-compatible endpoint on 127.0.0.1 in front of the run's model client):")
        out += relay_lines(relay, by_system)
    return out


LEADERBOARD_HEADERS = ("rank", "system", "n", "mean", "95% interval", "evidence recall", "calls",
                       "cached/replayed", "tokens", "tokens/point", "judge calls", "judge tokens")


def leaderboard_rows(rows: Sequence[LeaderboardRow]) -> list[list[str]]:
    return [[str(r.rank) if r.rank is not None else "-", f"{r.system} ({AID_MARK})" if r.measurement_aid else r.system,
             str(r.n), fmt_score(r.mean), fmt_interval(r.interval), fmt_score(r.evidence_recall), fmt_int(r.calls),
             fmt_int(r.cached_calls + r.replayed_calls), fmt_int(r.tokens),
             "-" if r.tokens_per_point is None else f"{r.tokens_per_point:,.0f}",
             fmt_int(r.judge_calls), fmt_int(r.judge_tokens)] for r in rows]


LEADERBOARD_NOTE = ("calls and tokens: the system's own (its ingest, its library's calls through the relay, its "
                    "answers), the judge's apart; calls are live ones, tokens as recorded whether live, cached or "
                    "replayed; tokens/point = tokens / the sum of its scores")


def render_leaderboard(rows: Sequence[LeaderboardRow]) -> list[str]:
    out = ["leaderboard (ranked by mean score, ties by tokens per point; same answer and judge models):"]
    out += table(LEADERBOARD_HEADERS, leaderboard_rows(rows), align="rlrrrrrrrrrr")
    out.append(LEADERBOARD_NOTE)
    return out

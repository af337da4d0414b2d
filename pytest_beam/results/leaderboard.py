"""Several systems ranked, cost beside score: the record's `leaderboard`, the summary's and the page's rows.

The rank is by overall mean score (higher first), ties by tokens per point (cheaper first), then by
name. A system's cost is what its own memory and its answers took: every meter row of the system
(its ingest, its library's calls through the relay, its answering calls) except the judge's, which
scores every system alike and is shown apart. Calls are live calls, as everywhere; cached and
replayed calls are counted apart, and count in tokens with the tokens they were recorded with.
Tokens per point are the system's tokens divided by the points it scored (the sum of its question
scores): what one point of BEAM's score cost it; a system that scored nothing has none. A
measurement aid (`gold-evidence`) is listed after the ranked systems, unranked: it reads what no
real system may.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from .stats import LeaderboardRow

if TYPE_CHECKING:
    from ..llm.meter import Usage
    from .question_record import QuestionRecord
    from .stats import SystemStats

JUDGE_ROWS = ("judge",)


def _tokens(row: Usage) -> int:
    """A row's tokens whether its calls went out or came from the cache or a cassette (their recorded
    usage, `cached_tokens`): a replayed run ranks on what the recorded one spent, not on zero."""
    return row.prompt_tokens + row.completion_tokens + row.cached_tokens


def leaderboard(systems: Mapping[str, SystemStats], usage_by_system: Mapping[str, Mapping[str, Usage]],
                questions: Iterable[QuestionRecord]) -> list[LeaderboardRow]:
    """The ranked rows of the systems in `systems` (empty when fewer than two were compared)."""
    if len(systems) < 2:
        return []
    points: dict[str, float] = {}
    for q in questions:
        if q.scored and q.score is not None:
            points[q.system or ""] = points.get(q.system or "", 0.0) + float(q.score)
    rows = []
    for name, stats in systems.items():
        usage = usage_by_system.get(name, {})
        own = [row for role, row in usage.items() if role not in JUDGE_ROWS]
        judge = [row for role, row in usage.items() if role in JUDGE_ROWS]
        tokens = sum(_tokens(row) for row in own)
        scored = round(points.get(name, 0.0), 6)
        rows.append(LeaderboardRow(
            system=name, measurement_aid=stats.measurement_aid, n=stats.overall.n, mean=stats.overall.mean,
            interval=stats.overall.interval, evidence_recall=stats.overall.evidence_recall, points=scored,
            calls=sum(row.calls for row in own), cached_calls=sum(row.cached_calls for row in own),
            replayed_calls=sum(row.replayed_calls for row in own), tokens=tokens,
            judge_calls=sum(row.calls for row in judge),
            judge_tokens=sum(_tokens(row) for row in judge),
            tokens_per_point=round(tokens / scored, 1) if scored > 0 else None))
    ranked = sorted((r for r in rows if not r.measurement_aid),
                    key=lambda r: (-(r.mean if r.mean is not None else -1.0),
                                   r.tokens_per_point if r.tokens_per_point is not None else float("inf"), r.system))
    for k, row in enumerate(ranked, start=1):
        row.rank = k
    return [*ranked, *(r for r in rows if r.measurement_aid)]

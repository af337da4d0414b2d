"""Several memory systems side by side: per-system, per-ability cells, and the ceiling's gaps.

`gold-evidence` answers from each question's own sources, so under the same reader and judge
its score is what a perfect retriever would reach: a system's gap to it is what that system's
retrieval loses, and its gap to 1.0 is what the reader and the judge lose. It is a measurement
aid, kept in the tables with that mark and never ranked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..llm.meter import Usage
from .aggregate import interval_of
from .stats import SystemCell, SystemStats

if TYPE_CHECKING:
    from .question_record import QuestionRecord
    from .schema import IngestEntry

CEILING = "gold-evidence"
AID_MARK = "measurement aid"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _cell(questions: Sequence[QuestionRecord]) -> SystemCell:
    scored = [q for q in questions if q.scored]
    ran = [q for q in questions if q.outcome != "skipped"]
    recall = [float(q.evidence_recall) for q in ran if q.evidence_recall is not None]
    context = [float(q.context_tokens) for q in ran if q.context_tokens is not None]
    return SystemCell(
        n=len(scored), mean=_mean([float(q.score) for q in scored]),  # type: ignore[arg-type]
        interval=interval_of(questions), evidence_recall=_mean(recall), context_tokens=_mean(context),
        calls=sum(q.calls for q in questions), cached_calls=sum(q.cached_calls for q in questions),
        replayed_calls=sum(q.replayed_calls for q in questions),
        # a cached or replayed call counts with the tokens it was recorded with (else a replay shows 0)
        tokens=sum(row.tokens + row.cached_tokens for q in questions for row in q.usage.values()),
        errors=sum(q.outcome == "error" for q in questions), skipped=sum(q.outcome == "skipped" for q in questions))


def system_stats(questions: Iterable[QuestionRecord], order: Sequence[str], aids: Iterable[str],
                 ingest: Mapping[str, IngestEntry] | None = None) -> dict[str, SystemStats]:
    """{system: stats} in `order`; `ingest` is the record's per-run ingest keyed `system/conversation`."""
    by_system: dict[str, list[QuestionRecord]] = {name: [] for name in order}
    for q in questions:
        by_system.setdefault(q.system or order[0], []).append(q)
    aids = set(aids)
    out: dict[str, SystemStats] = {}
    for name, qs in by_system.items():
        by_ability: dict[str, list[QuestionRecord]] = {}
        for q in qs:
            by_ability.setdefault(q.ability, []).append(q)
        ingest_usage = Usage()
        for key, info in (ingest or {}).items():
            if key.split("/", 1)[0] == name or (len(by_system) == 1 and "/" not in key):
                ingest_usage = sum(info.usage.values(), ingest_usage)
        out[name] = SystemStats(measurement_aid=name in aids,
                                abilities={a: _cell(by_ability[a]) for a in sorted(by_ability)},
                                overall=_cell(qs), ingest_calls=ingest_usage.calls,
                                ingest_tokens=ingest_usage.tokens + ingest_usage.cached_tokens,
                                ingest_cached_calls=ingest_usage.cached_calls,
                                ingest_replayed_calls=ingest_usage.replayed_calls)
    return out


def gap(ceiling: SystemCell | None, cell: SystemCell | None) -> float | None:
    """What retrieval loses: the ceiling's mean minus the system's (None when either has none)."""
    if ceiling is None or cell is None or ceiling.mean is None or cell.mean is None:
        return None
    return round(ceiling.mean - cell.mean, 6)


def reader_loss(ceiling: SystemCell | None) -> float | None:
    """What the reader and the judge lose: 1.0 minus the ceiling's mean."""
    return None if ceiling is None or ceiling.mean is None else round(1.0 - ceiling.mean, 6)


def display_name(name: str, stats: SystemStats) -> str:
    return f"{name} ({AID_MARK})" if stats.measurement_aid else name

"""Pure-Python metrics of the scorer: Kendall tau-b and the event-ordering metric.

No scipy: :func:`kendall_tau_b` computes the same statistic as
``scipy.stats.kendalltau(x, y, variant="b")`` (ties handled the same way, NaN when undefined),
directly over all pairs. The event lists BEAM compares have a handful of items, so O(n^2) is
nothing.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "EventOrderingMetrics",
    "event_ordering_metrics",
    "evidence_recall",
    "kendall_tau_b",
    "ranks_over_union",
]


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two equally long sequences, as scipy's ``kendalltau(variant="b")``.

    ``tau_b = (C - D) / sqrt((n0 - n1) * (n0 - n2))`` with ``n0 = n(n-1)/2`` pairs, ``C``/``D``
    the concordant/discordant pairs, ``n1``/``n2`` the pairs tied in ``x``/``y`` (a pair tied in
    both counts in both, and is neither concordant nor discordant).

    Returns ``nan`` when the statistic is undefined: fewer than two items, or every pair tied in
    ``x`` or every pair tied in ``y`` (scipy returns NaN there too). The result is clipped to
    [-1, 1] against rounding, as scipy does.
    """
    n = len(x)
    if n != len(y):
        raise ValueError(f"kendall_tau_b needs sequences of equal length, got {n} and {len(y)}")
    total = n * (n - 1) // 2
    if total == 0:
        return math.nan
    concordant_minus_discordant = 0
    tied_x = 0
    tied_y = 0
    for i in range(n):
        xi, yi = x[i], y[i]
        for j in range(i + 1, n):
            dx = (xi > x[j]) - (xi < x[j])
            dy = (yi > y[j]) - (yi < y[j])
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            concordant_minus_discordant += dx * dy  # +1 concordant, -1 discordant, 0 any tie
    if tied_x == total or tied_y == total:
        return math.nan
    # Same order of operations as scipy: (con - dis) / sqrt(tot - xtie) / sqrt(tot - ytie).
    tau = concordant_minus_discordant / math.sqrt(total - tied_x) / math.sqrt(total - tied_y)
    return min(1.0, max(-1.0, tau))


def ranks_over_union(seq: Sequence[Hashable], union: Sequence[Hashable]) -> list[int]:
    """1-based position of each union item in ``seq``; items absent from ``seq`` tie at ``len(union)+1``.

    As upstream, a repeated item takes the rank of its LAST occurrence.
    """
    tie_rank = len(union) + 1
    position = {item: i + 1 for i, item in enumerate(seq)}
    return [position.get(u, tie_rank) for u in union]


@dataclass(frozen=True)
class EventOrderingMetrics:
    precision: float
    recall: float
    f1: float
    tau_b: float
    """Raw Kendall tau-b; ``nan`` when undefined."""
    tau_norm: float
    """``(tau_b + 1) / 2``, or 0 when ``tau_b`` is NaN."""
    score: float
    """``f1 * tau_norm``."""
    reference_order: tuple[Hashable, ...]
    answer_order: tuple[Hashable, ...]

    @property
    def tau_defined(self) -> bool:
        return not math.isnan(self.tau_b)


def event_ordering_metrics(reference: Sequence[Hashable], aligned: Sequence[Hashable]) -> EventOrderingMetrics:
    """BEAM's event-ordering metric over an already aligned answer.

    ``reference`` is the rubric's event list; ``aligned`` the answer's lines in order, each one
    replaced by the rubric event it matched, unmatched lines kept as themselves. Formulas as in the
    benchmark (compute_metrics.event_ordering_score): ``tp = |set(ref) & set(ans)|``, ``fp`` = answer
    items not in the reference, ``fn`` = reference items not in the answer, P/R/F1 (0 when a
    denominator is 0); tau-b over the union (reference order first, first occurrence) with missing
    items tied at ``len(union) + 1``; ``tau_norm = (tau_b + 1) / 2`` -- where upstream lets a NaN
    through, this returns 0; ``score = f1 * tau_norm``.
    """
    ref = list(reference)
    ans = list(aligned)
    ref_set = set(ref)
    ans_set = set(ans)
    tp = len(ref_set & ans_set)
    fp = sum(1 for item in ans if item not in ref_set)
    fn = sum(1 for item in ref if item not in ans_set)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    union = list(dict.fromkeys(ref + ans))
    tau_b = kendall_tau_b(ranks_over_union(ref, union), ranks_over_union(ans, union))
    tau_norm = 0.0 if math.isnan(tau_b) else (tau_b + 1) / 2
    return EventOrderingMetrics(
        precision=float(precision),
        recall=float(recall),
        f1=float(f1),
        tau_b=tau_b,
        tau_norm=tau_norm,
        score=f1 * tau_norm,
        reference_order=tuple(ref),
        answer_order=tuple(ans),
    )


def evidence_recall(source_message_ids: Iterable[int], retrieved_message_ids: Iterable[int] | None) -> float | None:
    """Share of the question's source message ids that the agent's tool results contained.

    ``None`` when the question has no source ids (abstention questions): there is nothing to
    recall. Duplicates are ignored; ``retrieved_message_ids=None`` counts as nothing retrieved.
    """
    sources = set(source_message_ids)
    if not sources:
        return None
    retrieved = set(retrieved_message_ids or ())
    return len(sources & retrieved) / len(sources)

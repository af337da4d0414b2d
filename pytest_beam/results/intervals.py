"""95% intervals for BEAM means, by a bootstrap over conversations.

A conversation's questions share one memory (one ingest, one graph), so their scores are not
independent: resampling questions one by one would give intervals that are too narrow. The
cluster bootstrap draws whole conversations with replacement and recomputes the mean over all
questions of the drawn conversations. Seeded, so the same scores give the same interval.

The paired interval compares two runs over the questions both answered: each question's delta
(B - A) is kept with its conversation, and the conversations are resampled as above, so both runs
see the same draw.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Interval",
    "PairedInterval",
    "cluster_bootstrap",
    "conversation_of",
    "paired_bootstrap",
    "resample_draws",
]

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 20251031


class Interval(BaseModel):
    """A mean and its percentile bootstrap interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mean: float
    low: float
    high: float
    level: float
    questions: int
    clusters: int
    resamples: int
    seed: int


class PairedInterval(Interval):
    """The mean delta (B - A) over shared questions, with its interval."""

    distinguishable: bool
    """The interval excludes 0: the runs differ beyond resampling noise at this level."""
    only_in_a: int
    only_in_b: int


def conversation_of(question_id: str) -> str:
    """``"conv17:temporal_reasoning:1"`` -> ``"17"``, ``"500K/conv3:..."`` -> ``"500K/3"``: the cluster
    of a BEAM question id (a conversation of one tier)."""
    from ..data.ids import DEFAULT_TIER, require_question_id

    question = require_question_id(question_id)
    return question.conversation if question.tier == DEFAULT_TIER else f"{question.tier}/{question.conversation}"


def _clusters(scores: Mapping[str, float], cluster_of: Callable[[str], str]) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster (in conversation order): the sum of its scores and its number of questions."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for qid, score in scores.items():
        value = float(score)
        if not np.isfinite(value):
            raise ValueError(f"score of {qid} is {score!r}; a bootstrap needs finite scores")
        key = cluster_of(qid)
        sums[key] = sums.get(key, 0.0) + value
        counts[key] = counts.get(key, 0) + 1
    keys = sorted(sums, key=_cluster_order)  # not first-seen: a record's order is its workers' finishing order
    return np.array([sums[k] for k in keys], dtype=float), np.array([counts[k] for k in keys], dtype=float)


def _cluster_order(key: str) -> tuple[int, int, str]:
    """Conversation ids in numeric order ("2" before "10"), any other cluster name after them."""
    return (0, int(key), key) if key.isdigit() else (1, 0, key)


def resample_draws(clusters: int, resamples: int, seed: int) -> np.ndarray:
    """The cluster indices drawn, one row per resample (numpy's PCG64 from ``seed``)."""
    return np.random.default_rng(seed).integers(0, clusters, size=(resamples, clusters))


def _bootstrap(sums: np.ndarray, counts: np.ndarray, level: float, draws: np.ndarray) -> tuple[float, float]:
    stats = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [tail, 1.0 - tail])  # numpy's default: linear interpolation
    return float(low), float(high)


def _check(level: float, resamples: int) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level {level} must be between 0 and 1")
    if resamples < 1:
        raise ValueError(f"resamples {resamples} must be at least 1")


def cluster_bootstrap(scores: Mapping[str, float], *, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED, cluster_of: Callable[[str], str] = conversation_of,
                      draws: np.ndarray | None = None) -> Interval:
    """The mean of per-question ``scores`` (question id -> score) and its cluster-bootstrap interval.

    Each resample draws as many clusters as there are, with replacement, and takes the mean over
    every question of the drawn clusters (a conversation drawn twice counts twice). The interval is
    the ``(1-level)/2`` and ``(1+level)/2`` quantiles of the resampled means. ``draws`` replaces
    the random draws (rows of cluster indices, clusters in conversation order), for exact checks.
    """
    _check(level, resamples)
    if not scores:
        raise ValueError("no scores to bootstrap")
    sums, counts = _clusters(scores, cluster_of)
    chosen = resample_draws(len(sums), resamples, seed) if draws is None else np.asarray(draws, dtype=int)
    low, high = _bootstrap(sums, counts, level, chosen)
    return Interval(mean=float(sums.sum() / counts.sum()), low=low, high=high, level=level, questions=len(scores),
                    clusters=len(sums), resamples=len(chosen), seed=seed)


def paired_bootstrap(a: Mapping[str, float], b: Mapping[str, float], *, level: float = 0.95,
                     resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                     cluster_of: Callable[[str], str] = conversation_of) -> PairedInterval:
    """Mean delta ``b - a`` over the questions both runs scored, with its cluster-bootstrap interval.

    ``distinguishable`` is True when the interval lies wholly above or wholly below zero.
    """
    shared = [qid for qid in a if qid in b]
    if not shared:
        raise ValueError("the two runs share no question; there is no paired delta")
    deltas = {qid: float(b[qid]) - float(a[qid]) for qid in shared}
    base = cluster_bootstrap(deltas, level=level, resamples=resamples, seed=seed, cluster_of=cluster_of)
    return PairedInterval(**base.model_dump(), distinguishable=base.low > 0.0 or base.high < 0.0,
                          only_in_a=len(a) - len(shared), only_in_b=sum(1 for qid in b if qid not in a))

"""Per-ability and overall means of a run's questions (product.md section 3), with their intervals."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .intervals import DEFAULT_RESAMPLES, DEFAULT_SEED, cluster_bootstrap
from .stats import AbilityStats, MeanInterval, OverallStats

if TYPE_CHECKING:
    from .question_record import QuestionRecord

__all__ = ["aggregate", "cluster_key", "interval_of", "judge_agreement", "percentile"]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def cluster_key(q: QuestionRecord) -> str:
    """The conversation a question belongs to (its tier's: ``500K/conv3``), from its id where it parses,
    else its ``conversation_id``."""
    from ..data.ids import parse_question_id

    question = parse_question_id(q.id)
    return question.conversation_label if question is not None else (q.conversation_id or q.id)


def interval_of(questions: Sequence[QuestionRecord], *, seed: int = DEFAULT_SEED,
                resamples: int = DEFAULT_RESAMPLES) -> MeanInterval | None:
    """The 95% cluster-bootstrap interval of the mean score of the scored ``questions`` (None: none scored).

    Questions of one conversation share one memory, so conversations, not questions, are resampled.
    """
    scored = [q for q in questions if q.scored]
    if not scored:
        return None
    clusters = {q.id: cluster_key(q) for q in scored}
    iv = cluster_bootstrap({q.id: float(q.score) for q in scored}, seed=seed, resamples=resamples,  # type: ignore[arg-type]
                           cluster_of=clusters.__getitem__)
    return MeanInterval(low=iv.low, high=iv.high, level=iv.level, clusters=iv.clusters, resamples=iv.resamples,
                        seed=iv.seed)


def judge_agreement(questions: Iterable[QuestionRecord]) -> float | None:
    """Share of repeated judge decisions (rubric items, event-ordering lines) on which every repeat
    agreed (None: no repeats)."""
    from ..scoring.repeats import agreement_units

    units = [agreement_units(q.items, q.event_detail) for q in questions]
    repeated = sum(n for _, n in units)
    return sum(a for a, _ in units) / repeated if repeated else None


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` in 0..1): a value that occurred, no interpolation."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return float(ordered[rank - 1])


def aggregate(questions: Iterable[QuestionRecord]) -> tuple[dict[str, AbilityStats], OverallStats]:
    """Per-ability and overall means.

    Each mean carries its 95% cluster-bootstrap interval (seeded: the same scores give the same
    interval). Only questions with a score count (an error or a skip is counted apart, never as 0). The
    excluding mean leaves out questions flagged ``known_bad_rubric``. Each flag is counted once per
    question that carries it, errors and skips included.
    """
    questions = list(questions)
    by_ability: dict[str, list[QuestionRecord]] = {}
    for q in questions:
        by_ability.setdefault(q.ability, []).append(q)

    abilities: dict[str, AbilityStats] = {}
    all_scores: list[float] = []
    all_excl: list[float] = []
    errors = skipped = 0
    for ability in sorted(by_ability):
        qs = by_ability[ability]
        scores = [q.score for q in qs if q.scored]
        excl = [
            (q.score_excluding_known_bad if q.score_excluding_known_bad is not None else q.score)
            for q in qs
            if q.scored and not q.known_bad
        ]
        flags: dict[str, int] = {}
        for q in qs:
            for flag in sorted(set(q.flags)):
                flags[flag] = flags.get(flag, 0) + 1
        stats = AbilityStats(
            n=len(scores),
            mean=_mean(scores),  # type: ignore[arg-type]
            n_excluding_known_bad=len(excl),
            mean_excluding_known_bad=_mean(excl),  # type: ignore[arg-type]
            flags=dict(sorted(flags.items())),
            passed=sum(q.outcome in ("passed", "xpassed") for q in qs),
            failed=sum(q.outcome in ("failed", "xfailed") for q in qs),
            errors=sum(q.outcome == "error" for q in qs),
            skipped=sum(q.outcome == "skipped" for q in qs),
            interval=interval_of(qs),
        )
        abilities[ability] = stats
        all_scores.extend(scores)  # type: ignore[arg-type]
        all_excl.extend(excl)  # type: ignore[arg-type]
        errors += stats.errors
        skipped += stats.skipped

    context = [float(q.context_tokens) for q in questions if q.context_tokens is not None and q.outcome != "skipped"]
    ability_means = [s.mean for s in abilities.values() if s.mean is not None]
    overall = OverallStats(
        n=len(all_scores),
        mean=_mean(all_scores),
        n_excluding_known_bad=len(all_excl),
        mean_excluding_known_bad=_mean(all_excl),
        mean_of_abilities=_mean(ability_means),
        errors=errors,
        skipped=skipped,
        interval=interval_of(questions),
        judge_agreement=judge_agreement(questions),
        context_tokens_mean=_mean(context),
        context_tokens_p95=percentile(context, 0.95),
    )
    return abilities, overall

"""Per-ability and overall means of a run's questions (product.md section 3)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .schema import AbilityStats, OverallStats, QuestionRecord

__all__ = ["aggregate"]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(questions: Iterable[QuestionRecord]) -> tuple[dict[str, AbilityStats], OverallStats]:
    """Per-ability and overall means.

    Only questions with a score count (an error or a skip is counted apart, never as 0). The
    excluding mean leaves out questions flagged ``known_bad_rubric``. Each flag is counted once per
    question that carries it, errors and skips included.
    """
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
        )
        abilities[ability] = stats
        all_scores.extend(scores)  # type: ignore[arg-type]
        all_excl.extend(excl)  # type: ignore[arg-type]
        errors += stats.errors
        skipped += stats.skipped

    ability_means = [s.mean for s in abilities.values() if s.mean is not None]
    overall = OverallStats(
        n=len(all_scores),
        mean=_mean(all_scores),
        n_excluding_known_bad=len(all_excl),
        mean_excluding_known_bad=_mean(all_excl),
        mean_of_abilities=_mean(ability_means),
        errors=errors,
        skipped=skipped,
    )
    return abilities, overall

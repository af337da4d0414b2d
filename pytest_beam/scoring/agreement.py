"""How far a judge agrees with the calibration labels: agreement, false passes, false fails, Cohen's kappa.

Raw agreement flatters a judge when one label dominates (a judge that always says "pass" agrees
with every expected pass); Cohen's kappa counts only the agreement beyond what the judge's and the
labels' own pass rates would give by chance, so a constant judge scores 0 whatever the mix. That
is why the calibration bar is a kappa.

Intervals: a percentile bootstrap over questions (a question's cases share its rubric and its
reference, so they are resampled together), seeded, as the run's own intervals are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .calibration import CalibrationCase, CaseVerdict

__all__ = ["AgreementStats", "Bounds", "agreement_by_ability", "agreement_stats", "cohen_kappa"]

RESAMPLES = 2000
SEED = 20251205


class Bounds(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    low: float
    high: float


class AgreementStats(BaseModel):
    """One group of judged cases (an ability, or all) against their labels."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(description="Judged cases")
    expected_pass: int
    expected_fail: int
    agreement: float | None = Field(None, description="Share of cases where the judge gave the label")
    false_passes: int = Field(0, description="Judged pass where the label is fail")
    false_fails: int = Field(0, description="Judged fail where the label is pass")
    false_pass_rate: float | None = Field(None, description="false_passes / expected_fail")
    false_fail_rate: float | None = Field(None, description="false_fails / expected_pass")
    kappa: float | None = Field(None, description="Cohen's kappa; None when it is undefined (both always one label)")
    agreement_interval: Bounds | None = None
    false_pass_interval: Bounds | None = None
    false_fail_interval: Bounds | None = None
    kappa_interval: Bounds | None = None
    questions: int = Field(0, description="Questions the cases came from (the bootstrap's clusters)")


def cohen_kappa(expected: Sequence[bool], judged: Sequence[bool]) -> float | None:
    """(p_o - p_e) / (1 - p_e); None when p_e is 1 (labels and verdicts all one and the same class)."""
    n = len(expected)
    if n == 0 or n != len(judged):
        return None
    observed = sum(e == j for e, j in zip(expected, judged)) / n
    p_exp, p_judge = sum(expected) / n, sum(judged) / n
    chance = p_exp * p_judge + (1 - p_exp) * (1 - p_judge)
    if math.isclose(chance, 1.0):
        return None
    return (observed - chance) / (1 - chance)


def _rates(expected: np.ndarray, judged: np.ndarray) -> tuple[float, float, float, float]:
    """agreement, false-pass rate, false-fail rate, kappa (NaN where undefined), for arrays of 0/1."""
    n = expected.size
    agreement = float((expected == judged).mean()) if n else math.nan
    fails = expected == 0
    passes = expected == 1
    fp = float(judged[fails].mean()) if fails.any() else math.nan
    ff = float((1 - judged[passes]).mean()) if passes.any() else math.nan
    kappa = cohen_kappa(expected.astype(bool).tolist(), judged.astype(bool).tolist())
    return agreement, fp, ff, math.nan if kappa is None else kappa


def _bounds(values: np.ndarray) -> Bounds | None:
    finite = values[np.isfinite(values)]
    if finite.size < len(values) / 2:  # undefined in most resamples: no honest interval
        return None
    low, high = np.quantile(finite, [0.025, 0.975])
    return Bounds(low=float(low), high=float(high))


def agreement_stats(pairs: Sequence[tuple[CalibrationCase, CaseVerdict]], *, resamples: int = RESAMPLES,
                    seed: int = SEED) -> AgreementStats:
    """The group's figures with 95% bootstrap intervals (cases resampled by question)."""
    expected = np.array([c.expected_pass for c, _ in pairs], dtype=int)
    judged = np.array([v.judged_pass for _, v in pairs], dtype=int)
    n = len(pairs)
    if n == 0:
        return AgreementStats(n=0, expected_pass=0, expected_fail=0)
    agreement, fp, ff, kappa = _rates(expected, judged)
    clusters: dict[str, list[int]] = {}
    for index, (case, _) in enumerate(pairs):
        clusters.setdefault(case.question_id, []).append(index)
    groups = [np.array(ix) for ix in clusters.values()]
    draws = np.random.default_rng(seed).integers(0, len(groups), size=(resamples, len(groups)))
    stats = np.empty((resamples, 4))
    for r, draw in enumerate(draws):
        idx = np.concatenate([groups[g] for g in draw])
        stats[r] = _rates(expected[idx], judged[idx])
    false_passes = int(((expected == 0) & (judged == 1)).sum())
    false_fails = int(((expected == 1) & (judged == 0)).sum())

    def defined(value: float) -> float | None:
        return None if math.isnan(value) else value

    return AgreementStats(
        n=n, expected_pass=int(expected.sum()), expected_fail=int(n - expected.sum()), agreement=defined(agreement),
        false_passes=false_passes, false_fails=false_fails, false_pass_rate=defined(fp), false_fail_rate=defined(ff),
        kappa=defined(kappa), agreement_interval=_bounds(stats[:, 0]),
        false_pass_interval=_bounds(stats[:, 1]) if not math.isnan(fp) else None,
        false_fail_interval=_bounds(stats[:, 2]) if not math.isnan(ff) else None,
        kappa_interval=_bounds(stats[:, 3]) if not math.isnan(kappa) else None, questions=len(groups))


def agreement_by_ability(cases: Sequence[CalibrationCase], verdicts: Mapping[str, CaseVerdict]
                         ) -> tuple[dict[str, AgreementStats], AgreementStats]:
    """Per ability (in BEAM's order) and overall, over the cases that have a verdict."""
    from ..data.records import ABILITIES

    pairs = [(c, verdicts[c.id]) for c in cases if c.id in verdicts]
    by_ability = {ability: agreement_stats([p for p in pairs if p[0].ability == ability])
                  for ability in ABILITIES if any(p[0].ability == ability for p in pairs)}
    return by_ability, agreement_stats(pairs)

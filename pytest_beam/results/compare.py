"""Two records compared: per-ability deltas with paired intervals, comparability, the regression gate.

The terminal (:mod:`.comparison_text`) and the HTML page both read one :class:`Comparison`, so
they cannot disagree on a delta, on what changed, or on whether a drop is beyond noise.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .aggregate import cluster_key
from .intervals import PairedInterval, paired_bootstrap
from .question_record import QuestionRecord
from .schema import RunRecord
from .stats import AbilityStats
from .text import score_delta

__all__ = [
    "OVERALL", "DeltaRow", "Comparison", "compare", "comparison_warnings", "changed_questions", "profile_mismatch",
    "drops_beyond", "what_changed",
]

OVERALL = "overall"


class DeltaRow(BaseModel):
    """One ability (or ``overall``): A's and B's means and B - A, with the paired interval of the delta."""

    model_config = ConfigDict(frozen=True)

    ability: str
    n_a: int
    mean_a: float | None
    n_b: int
    mean_b: float | None
    delta: float | None
    delta_excluding_known_bad: float | None
    paired: PairedInterval | None
    """Over the questions both runs scored; None when they share none."""


class Comparison(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    rows: list[DeltaRow]
    warnings: list[str]
    profile_mismatch: str | None
    changed: list[tuple[str, QuestionRecord | None, QuestionRecord | None]]


def _norm_models(models: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in models.items() if v}


def profile_mismatch(a: RunRecord, b: RunRecord) -> str | None:
    """Why the two records' scores are not on one scale (profile or prompt texts differ); None if they are."""
    if (a.profile or None) != (b.profile or None):
        return f"the records were scored under different profiles ({a.profile or '-'} -> {b.profile or '-'})"
    if a.scoring is not None and b.scoring is not None and a.scoring.prompt_sha256 and b.scoring.prompt_sha256 \
            and a.scoring.prompt_sha256 != b.scoring.prompt_sha256:
        names = sorted(k for k in set(a.scoring.prompt_sha256) | set(b.scoring.prompt_sha256)
                       if a.scoring.prompt_sha256.get(k) != b.scoring.prompt_sha256.get(k))
        return "the records' judge prompts differ (" + ", ".join(names) + ")"
    return None


def comparison_warnings(a: RunRecord, b: RunRecord) -> list[str]:
    """Why the two records may not be comparable (models, scorer, mode, data)."""
    warnings = []
    if _norm_models(a.models) != _norm_models(b.models):
        roles = sorted(set(a.models) | set(b.models))
        diffs = [f"{r}: {a.models.get(r) or '-'} -> {b.models.get(r) or '-'}" for r in roles
                 if (a.models.get(r) or None) != (b.models.get(r) or None)]
        warnings.append("the records used different models (" + "; ".join(diffs) + ")")
    if (a.system or None) != (b.system or None):
        warnings.append(f"the records measured different systems ({a.system or '-'} -> {b.system or '-'})")
    if (a.scorer or None) != (b.scorer or None):
        warnings.append(f"the records used different scorers ({a.scorer or '-'} -> {b.scorer or '-'})")
    if (a.mode or None) != (b.mode or None):
        warnings.append(f"the records ran different modes ({a.mode or '-'} -> {b.mode or '-'})")
    if (a.data_revision or None) != (b.data_revision or None):
        warnings.append("the records used different data revisions "
                        f"({a.data_revision or '-'} -> {b.data_revision or '-'})")
    return warnings


def changed_questions(a: RunRecord, b: RunRecord) -> list[tuple[str, QuestionRecord | None, QuestionRecord | None]]:
    """Questions whose score, outcome or answer differs between the two records (or that only one has)."""
    a_questions, b_questions = a.primary_questions(), b.primary_questions()
    qa = {q.id: q for q in a_questions}
    qb = {q.id: q for q in b_questions}
    order = [q.id for q in a_questions] + [q.id for q in b_questions if q.id not in qa]
    out = []
    for qid in order:
        x, y = qa.get(qid), qb.get(qid)
        if (x is None or y is None or x.score != y.score or (x.answer or "") != (y.answer or "")
                or x.outcome != y.outcome):
            out.append((qid, x, y))
    return out


def what_changed(x: QuestionRecord | None, y: QuestionRecord | None) -> str:
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


def _paired(a: list[QuestionRecord], b: list[QuestionRecord]) -> PairedInterval | None:
    sa = {q.id: float(q.score) for q in a if q.scored}  # type: ignore[arg-type]
    sb = {q.id: float(q.score) for q in b if q.scored}  # type: ignore[arg-type]
    if not any(qid in sb for qid in sa):
        return None
    clusters = {q.id: cluster_key(q) for q in (*a, *b)}
    return paired_bootstrap(sa, sb, cluster_of=clusters.__getitem__)


def compare(a: RunRecord, b: RunRecord) -> Comparison:
    """A (the baseline) against B: every delta is B - A, each with a paired bootstrap interval over
    the questions both runs scored (conversations resampled, seeded)."""
    by_a: dict[str, list[QuestionRecord]] = {}
    by_b: dict[str, list[QuestionRecord]] = {}
    # with several systems a record's means are its first system's; compare like with like
    for q in a.primary_questions():
        by_a.setdefault(q.ability, []).append(q)
    for q in b.primary_questions():
        by_b.setdefault(q.ability, []).append(q)
    empty = AbilityStats()
    rows = []
    for ability in sorted(set(a.abilities) | set(b.abilities)):
        sa, sb = a.abilities.get(ability, empty), b.abilities.get(ability, empty)
        rows.append(DeltaRow(
            ability=ability, n_a=sa.n, mean_a=sa.mean, n_b=sb.n, mean_b=sb.mean,
            delta=score_delta(sa.mean, sb.mean),
            delta_excluding_known_bad=score_delta(sa.mean_excluding_known_bad, sb.mean_excluding_known_bad),
            paired=_paired(by_a.get(ability, []), by_b.get(ability, [])),
        ))
    oa, ob = a.overall, b.overall
    rows.append(DeltaRow(
        ability=OVERALL, n_a=oa.n, mean_a=oa.mean, n_b=ob.n, mean_b=ob.mean, delta=score_delta(oa.mean, ob.mean),
        delta_excluding_known_bad=score_delta(oa.mean_excluding_known_bad, ob.mean_excluding_known_bad),
        paired=_paired(a.primary_questions(), b.primary_questions()),
    ))
    return Comparison(rows=rows, warnings=comparison_warnings(a, b), profile_mismatch=profile_mismatch(a, b),
                      changed=changed_questions(a, b))


def drops_beyond(comparison: Comparison, threshold: float) -> list[DeltaRow]:
    """The rows (abilities or overall) that dropped by more than ``threshold`` beyond their interval.

    A row drops when the upper end of its paired 95% delta interval (B - A, over shared questions)
    is below ``-threshold``: even the most favourable reading of the resampling noise leaves B
    more than ``threshold`` under A. A row with no shared scored question cannot be judged and
    never counts as a drop.
    """
    if threshold < 0:
        raise ValueError(f"threshold {threshold} must be at least 0")
    return [row for row in comparison.rows if row.paired is not None and row.paired.high < -threshold]

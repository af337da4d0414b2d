"""The terminal comparison of two records (``pytest-beam report A B``); every delta is B - A."""

from __future__ import annotations

from .compare import OVERALL, Comparison, DeltaRow, compare, what_changed
from .intervals import PairedInterval
from .schema import ROLES, RunRecord
from .text import JUDGE_IS_AGENT_WARNING, fmt_delta, fmt_int, fmt_score, score_delta, section, table, total_usage

__all__ = ["render_comparison", "fmt_paired", "DISTINGUISHABLE_MARK"]

#: Marks a delta whose paired interval excludes zero.
DISTINGUISHABLE_MARK = "*"


def fmt_paired(paired: PairedInterval | None) -> str:
    """``[low, high]`` of a paired delta's interval, with the mark when it excludes zero."""
    if paired is None:
        return "-"
    text = f"[{fmt_delta(round(paired.low, 6))}, {fmt_delta(round(paired.high, 6))}]"
    return text + (f" {DISTINGUISHABLE_MARK}" if paired.distinguishable else "")


def _row(r: DeltaRow) -> list[object]:
    return [r.ability, r.n_a, fmt_score(r.mean_a), r.n_b, fmt_score(r.mean_b), fmt_delta(r.delta),
            fmt_paired(r.paired), fmt_delta(r.delta_excluding_known_bad)]


def render_comparison(a: RunRecord, b: RunRecord, *, force: bool = False,
                      comparison: Comparison | None = None) -> list[str]:
    """A (the baseline) and B side by side; every delta is B - A.

    Records scored under different profiles (or different prompt texts) are on different scales:
    their deltas are left out unless ``force``.
    """
    cmp = comparison or compare(a, b)
    out = [section("BEAM comparison")]
    for label, r in (("A", a), ("B", b)):
        extra = [x for x in (r.label and f"label {r.label}", r.system and f"system {r.system}",
                             r.started) if x]
        out.append(f"{label}: {r.run_id}" + (f" ({', '.join(extra)})" if extra else ""))
    for w in cmp.warnings:
        out.append(f"WARNING: {w}")
    for label, r in (("A", a), ("B", b)):
        if r.partial:
            out.append(f"WARNING: {label} is a partial run" + (f": {r.partial_reason}" if r.partial_reason else ""))
        if r.judge_is_agent:
            out.append(f"WARNING: {label}: {JUDGE_IS_AGENT_WARNING}")
    out.append("")

    if cmp.profile_mismatch and not force:
        out.append(f"no deltas shown: {cmp.profile_mismatch}, so their scores are not on one scale "
                   "(--force shows them anyway)")
        rows = [[r.ability, r.n_a, fmt_score(r.mean_a), r.n_b, fmt_score(r.mean_b)] for r in cmp.rows]
        out += table(["ability", "n A", "mean A", "n B", "mean B"], rows)
    else:
        if cmp.profile_mismatch:
            out.append(f"WARNING: {cmp.profile_mismatch}; deltas shown because of --force")
        out += table(["ability", "n A", "mean A", "n B", "mean B", "delta", "95% interval of delta",
                      "delta excl. known-bad"], [_row(r) for r in cmp.rows])
        overall = next(r for r in cmp.rows if r.ability == OVERALL)
        if overall.paired is not None:
            p = overall.paired
            out.append(f"intervals: paired {p.level:.0%} cluster bootstrap over the questions both runs scored "
                       f"({p.questions} shared, {p.only_in_a} only in A, {p.only_in_b} only in B); "
                       f"{DISTINGUISHABLE_MARK} = distinguishable from zero")

    models = sorted(set(a.models) | set(b.models), key=lambda r: (ROLES.index(r) if r in ROLES else 99, r))
    if models:
        out.append("")
        out.append("models by role:")
        out += table(["role", "A", "B"], [[r, a.models.get(r) or "-", b.models.get(r) or "-"] for r in models],
                     align="lll", indent="  ")

    if a.usage or b.usage:
        ua, ub = total_usage(a.usage), total_usage(b.usage)
        out.append("")
        out.append(
            f"model calls: A {fmt_int(ua.calls)} ({fmt_int(ua.tokens)} tokens), "
            f"B {fmt_int(ub.calls)} ({fmt_int(ub.tokens)} tokens)"
        )

    out.append("")
    if cmp.changed:
        out.append(f"questions whose score or answer changed ({len(cmp.changed)}):")
        hidden = bool(cmp.profile_mismatch) and not force
        rows = [[qid, fmt_score(x.score if x else None), fmt_score(y.score if y else None),
                 fmt_delta(score_delta(x.score if x else None, y.score if y else None)), what_changed(x, y)]
                for qid, x, y in cmp.changed]
        if hidden:  # no per-question deltas either: the scores are on different scales
            out += table(["question", "score A", "score B", "changed"], [r[:3] + r[4:] for r in rows],
                         align="lrrl", indent="  ")
        else:
            out += table(["question", "score A", "score B", "delta", "changed"], rows, align="lrrrl", indent="  ")
    else:
        out.append("no question changed score or answer")
    return out

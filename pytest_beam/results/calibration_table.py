"""The judge check as plain-text lines: the terminal summary, ``pytest-beam judge-check`` and ``report``."""

from __future__ import annotations

from ..scoring.agreement import AgreementStats, Bounds
from ..scoring.judge_bars import RIGHT_ANSWERS_FAILED
from ..scoring.judge_check import JudgeCheck
from .text import table

__all__ = ["JUDGE_CHECK_HEADERS", "judge_check_rows", "render_judge_check"]

JUDGE_CHECK_HEADERS = ("ability", "cases", "agreement", "false passes", "false fails", "kappa")


def _value(value: float | None, bounds: Bounds | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" [{bounds.low:.2f}, {bounds.high:.2f}]" if bounds is not None else "")


def _rate(count: int, of: int, value: float | None, bounds: Bounds | None) -> str:
    return "-" if not of else f"{count}/{of} " + _value(value, bounds)


def _row(name: str, s: AgreementStats) -> list[str]:
    return [name, str(s.n), _value(s.agreement, s.agreement_interval),
            _rate(s.false_passes, s.expected_fail, s.false_pass_rate, s.false_pass_interval),
            _rate(s.false_fails, s.expected_pass, s.false_fail_rate, s.false_fail_interval),
            _value(s.kappa, s.kappa_interval)]


def judge_check_rows(check: JudgeCheck) -> list[list[str]]:
    """One row per ability, then overall (the same cells the HTML page shows)."""
    return [_row(ability, stats) for ability, stats in check.abilities.items()] + [_row("overall", check.overall)]


def render_judge_check(check: JudgeCheck) -> list[str]:
    """The table, what it was measured on, and the warning when the judge is below the bar."""
    runs = f", {check.judge_runs} judge runs" if check.judge_runs > 1 else ""
    sampled = check.sample is not None and check.overall.n < len(check.cases) - len(check.excluded)
    sample = "a sample of " if sampled else ""
    out = [f"judge check: {sample}{check.overall.n} cases built from BEAM's reference answers, judged by "
           f"{check.judge_model or 'the judge'} (profile {check.profile}{runs}, {check.seconds:.0f} s)"]
    out += table(JUDGE_CHECK_HEADERS, judge_check_rows(check), align="lrrrrr", indent="  ")
    out.append("  false passes: an answer the judge passed that should fail (another question's reference, an empty or")
    out.append("  'I don't know' answer); false fails: a reference answer failed on its own rubric; "
               "95% bootstrap over questions")
    if check.excluded:
        out.append(f"  left out: {len(check.excluded)} reference cases the reference cannot stand for "
                   "(it lacks the item, or only describes a compliant answer); the record lists each with its reason")
    failed, judged = check.right_answer_fails
    if judged:
        out.append(f"  {RIGHT_ANSWERS_FAILED}: {failed}/{judged} "
                   f"({failed / judged:.2f}; bar {check.fail_bar:.2f})")
    warning = check.warning()
    out.append(f"WARNING: {warning}" if warning else bar_passed(check))
    return out


def bar_passed(check: JudgeCheck) -> str:
    """What a judge above both bars is told, in the summary and on the HTML page alike.

    Only asked when ``check.below_bar`` is False, which an undefined kappa never is.
    """
    kappa = check.overall.kappa
    if kappa is None:
        raise ValueError("bar_passed asked of a judge check whose kappa is undefined (it is below the bar)")
    fails = check.right_answer_fail_rate
    share = f", right answers failed {fails:.2f} <= {check.fail_bar:.2f}" if fails is not None else ""
    return f"the judge is above the bar (kappa {kappa:.2f} >= {check.bar:.2f}{share})"

"""The static parts of the HTML page: tables, the ability chart, the comparison and cost sections.

Every value is escaped here with :func:`html.escape`; nothing in this module quotes the chat.
"""

from __future__ import annotations

import html
import json
from typing import Any

from ..redaction import scrub_settings
from .compare import Comparison, compare, comparison_warnings
from .comparison_text import fmt_paired
from .record_files import jsonable
from .schema import RunRecord
from .text import (
    JUDGE_IS_AGENT_WARNING,
    SUMMED_LABEL,
    USAGE_HEADERS,
    WALL_LABEL,
    agent_calls_text,
    fmt_delta,
    fmt_interval,
    fmt_score,
    fmt_seconds,
    graph_rows,
    ordered_roles,
    phase_key,
    usage_rows,
)

__all__ = ["e", "kv_table", "html_table", "chart", "warnings", "settings_section", "abilities_table",
           "compare_section", "cost_section", "judge_check_section"]


def e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def kv_table(rows: list[tuple[str, Any]], cls: str = "kv") -> str:
    body = "".join(
        f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows if v not in (None, "")
    )
    return f'<table class="{cls}"><tbody>{body}</tbody></table>'


def html_table(headers: list[str], rows: list[list[Any]], num_from: int = 1, attrs: str = "") -> str:
    head = "".join(f'<th{" class=num" if i >= num_from else ""}>{e(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i >= num_from else ""}>{e(c)}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _value_label(s: Any) -> str:
    """The text right of an ability's bar."""
    if s.mean is None:
        return f"no score (n=0, {s.errors} errors, {s.skipped} skipped)"
    interval = f" {fmt_interval(s.interval)}" if s.interval else ""
    label = f"{fmt_score(s.mean)}{interval}  n={s.n}"
    if s.n_excluding_known_bad != s.n:
        label += f" \u00b7 excl. known-bad {fmt_score(s.mean_excluding_known_bad)} (n={s.n_excluding_known_bad})"
    if s.errors or s.skipped:
        label += f" \u00b7 {s.errors} err, {s.skipped} skip"
    return label


#: Width of one character of the chart's labels, generously (the page's 14 px sans-serif); the
#: chart is as wide as its longest label needs and scales to the page, so no label is cut off.
CHAR_PX = 7.6


def chart(record: RunRecord, other: RunRecord | None) -> str:
    abilities = list(record.abilities.items())
    labels = {ability: _value_label(s) for ability, s in abilities}
    label_w, bar_w = 230, 440
    text_w = max(330, round(CHAR_PX * max((len(t) for t in labels.values()), default=0)) + 20)
    row_h = 40 if other else 30
    top, bottom = 26, 40
    width = label_w + bar_w + text_w
    height = top + row_h * max(len(abilities), 1) + bottom
    parts = [
        f'<svg id="ability-chart" role="img" aria-labelledby="chart-title" viewBox="0 0 {width} {height}" '
        f'width="100%" style="max-width:{width}px" xmlns="http://www.w3.org/2000/svg">',
        '<title id="chart-title">Mean score per ability</title>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * bar_w
        parts.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{top - 6}" y2="{height - bottom + 4}"/>')
        parts.append(f'<text class="muted" x="{x:.1f}" y="{top - 10}" text-anchor="middle">{tick:g}</text>')
    if record.pass_score is not None:
        x = label_w + record.pass_score * bar_w
        parts.append(f'<line class="pass" x1="{x:.1f}" x2="{x:.1f}" y1="{top - 6}" y2="{height - bottom + 4}">'
                     f'<title>pass score {e(record.pass_score)}</title></line>')
    base = other.abilities if other else {}
    for i, (ability, s) in enumerate(abilities):
        y = top + i * row_h
        mean = s.mean if s.mean is not None else 0.0
        tip = (f"{ability}: mean {fmt_score(s.mean)} over {s.n} scored; excluding known-bad "
               f"{fmt_score(s.mean_excluding_known_bad)} over {s.n_excluding_known_bad}; "
               f"{s.errors} errors, {s.skipped} skipped")
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{e(ability)}</text>')
        parts.append(f'<rect class="bar" data-ability="{e(ability)}" x="{label_w}" y="{y + 3}" '
                     f'width="{mean * bar_w:.1f}" height="16"><title>{e(tip)}</title></rect>')
        b = base.get(ability)
        if other is not None and b is not None and b.mean is not None:  # base is other's abilities
            base_tip = f"baseline {other.run_id}: {fmt_score(b.mean)} (n={b.n})"
            parts.append(f'<rect class="bar-base" data-ability="{e(ability)}" x="{label_w}" y="{y + 22}" '
                         f'width="{b.mean * bar_w:.1f}" height="8"><title>{e(base_tip)}</title></rect>')
        if s.interval is not None:  # the 95% interval as a whisker across the bar
            x1, x2 = label_w + s.interval.low * bar_w, label_w + s.interval.high * bar_w
            parts.append(f'<line class="ci" data-ability="{e(ability)}" x1="{x1:.1f}" x2="{x2:.1f}" y1="{y + 11}" '
                         f'y2="{y + 11}"><title>{e(f"95% interval {fmt_interval(s.interval)}")}</title></line>')
        excl = s.mean_excluding_known_bad
        if excl is not None and s.n_excluding_known_bad != s.n:
            x = label_w + excl * bar_w
            parts.append(f'<line class="kb-mark" x1="{x:.1f}" x2="{x:.1f}" y1="{y}" y2="{y + 22}">'
                         f'<title>mean excluding known-bad rubrics: {fmt_score(excl)}</title></line>')
        parts.append(f'<text x="{label_w + bar_w + 10}" y="{y + 15}">{e(labels[ability])}</text>')
    ly = height - 14
    parts.append(f'<rect x="{label_w}" y="{ly - 9}" width="14" height="10" fill="#3b6fd6"/>')
    legend = "mean score"
    parts.append(f'<text x="{label_w + 20}" y="{ly}">{legend}</text>')
    parts.append(f'<line class="kb-mark" x1="{label_w + 120}" x2="{label_w + 120}" y1="{ly - 11}" y2="{ly + 2}"/>')
    parts.append(f'<text x="{label_w + 128}" y="{ly}">mean excluding known-bad rubrics</text>')
    if other:
        parts.append(f'<rect x="{label_w + 360}" y="{ly - 7}" width="14" height="7" fill="#c9d8f5"/>')
        parts.append(f'<text x="{label_w + 380}" y="{ly}">baseline {e(other.run_id)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def warnings(record: RunRecord, other: RunRecord | None) -> list[str]:
    out = []
    if record.judge_is_agent:
        out.append(JUDGE_IS_AGENT_WARNING)
    if record.partial:
        out.append("partial run" + (f": {record.partial_reason}" if record.partial_reason else "")
                   + "; the means cover only the questions that ran")
    if other is not None:
        out += comparison_warnings(other, record)
        if other.judge_is_agent and not record.judge_is_agent:
            out.append(f"baseline {other.run_id}: {JUDGE_IS_AGENT_WARNING}")
        if other.partial:
            out.append(f"the baseline {other.run_id} is a partial run")
    return out


def settings_section(record: RunRecord) -> str:
    commit = None
    if record.commit:
        commit = record.commit + (" (dirty)" if record.dirty else "" if record.dirty is False else " (dirty: unknown)")
    facts = kv_table([
        ("run id", record.run_id), ("started", record.started), ("finished", record.finished),
        ("mode", record.mode), ("scorer", record.scorer), ("data source", record.data_source),
        ("data revision", record.data_revision), ("commit", commit), ("package version", record.package_version),
        ("lockfile", record.lockfile_hash), ("pass score", record.pass_score), ("exit status", record.exit_status),
        ("judge is the agent's model", "yes" if record.judge_is_agent else "no"),
    ])
    models = html_table(["role", "model"], [[r, record.models[r] or "-"] for r in ordered_roles(record.models)],
                    num_from=99, attrs=' id="models"')
    settings = json.dumps(jsonable(scrub_settings(record.settings)), indent=1, ensure_ascii=False, sort_keys=True)
    return (
        '<h2 id="settings">Run settings</h2><div class="grid">'
        f"<div>{facts}</div><div><h3>Models by role</h3>{models}</div></div>"
        f'<details><summary>all settings</summary><pre class="mono">{e(settings)}</pre></details>'
    )


def abilities_table(record: RunRecord) -> str:
    rows = []
    for ability, s in record.abilities.items():
        rows.append([ability, s.n, fmt_score(s.mean), fmt_interval(s.interval), fmt_score(s.mean_excluding_known_bad),
                     s.passed, s.failed, s.errors, s.skipped, ", ".join(f"{k}={v}" for k, v in s.flags.items())])
    o = record.overall
    rows.append(["overall", o.n, fmt_score(o.mean), fmt_interval(o.interval), fmt_score(o.mean_excluding_known_bad),
                 sum(s.passed for s in record.abilities.values()), sum(s.failed for s in record.abilities.values()),
                 o.errors, o.skipped, ""])
    table = html_table(["ability", "n", "mean", "95% interval", "mean excl. known-bad", "passed", "failed", "errors",
                        "skipped", "flags"], rows, attrs=' id="abilities"')
    notes = []
    if o.interval is not None:
        notes.append(f"Intervals: {o.interval.level:.0%} cluster bootstrap over {o.interval.clusters} conversation(s), "
                     f"{o.interval.resamples:,} resamples, seed {o.interval.seed}.")
    if o.judge_agreement is not None:
        notes.append(f"Judge agreement: {o.judge_agreement:.1%} of rubric items (and event-ordering lines) got the "
                     "same verdict in every repeat.")
    if o.context_tokens_mean is not None:
        notes.append(f"Context tokens per question: mean {o.context_tokens_mean:,.0f}, "
                     f"p95 {o.context_tokens_p95:,.0f}.")
    return table + "".join(f'<p class="sub" id="ability-note-{i}">{e(n)}</p>' for i, n in enumerate(notes))


def _share(count: int, of: int) -> str:
    return f"{count}/{of}, {count / of:.2f}" if of else "none judged"


def _sentence(text: str) -> str:
    """A summary line as a sentence of the page: capital first, full stop last."""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _cls(d: float | None) -> str:
    return "pos" if d and d > 0 else "neg" if d and d < 0 else ""


def compare_section(record: RunRecord, other: RunRecord, *, force: bool = False,
                    comparison: Comparison | None = None) -> str:
    """The deltas (this run minus the baseline) with their paired intervals, the models, and the
    changed questions; the same :class:`Comparison` the terminal prints."""
    cmp = comparison or compare(other, record)
    hidden = bool(cmp.profile_mismatch) and not force
    if hidden:
        deltas = (f'<p class="sub" id="no-deltas">No deltas shown: {e(cmp.profile_mismatch)}, so their scores are '
                  "not on one scale (pytest-beam report --force shows them anyway).</p>")
    else:
        body = "".join(
            f'<tr data-ability="{e(r.ability)}"><td>{e(r.ability)}</td><td class="num">{r.n_a}</td>'
            f'<td class="num">{fmt_score(r.mean_a)}</td><td class="num">{r.n_b}</td>'
            f'<td class="num">{fmt_score(r.mean_b)}</td>'
            f'<td class="num delta {_cls(r.delta)}" data-delta="{"" if r.delta is None else r.delta}">'
            f"{fmt_delta(r.delta)}</td>"
            '<td class="num delta-interval" data-distinguishable='
            f'"{"yes" if r.paired and r.paired.distinguishable else "no"}">'
            f"{e(fmt_paired(r.paired))}</td>"
            f'<td class="num delta-excl {_cls(r.delta_excluding_known_bad)}">'
            f"{fmt_delta(r.delta_excluding_known_bad)}</td></tr>"
            for r in cmp.rows
        )
        head = "".join(f"<th{' class=num' if i else ''}>{h}</th>" for i, h in enumerate(
            ["ability", "n before", "mean before", "n now", "mean now", "\u0394 mean", "95% interval of \u0394",
             "\u0394 excl. known-bad"]))
        deltas = (f'<table id="deltas"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
                  '<p class="sub">Intervals: paired cluster bootstrap over the questions both runs scored; '
                  "* marks a delta distinguishable from zero.</p>")
    roles = ordered_roles({**other.models, **record.models})
    models = html_table(["role", f"baseline {other.run_id}", f"this run {record.run_id}"],
                        [[r, other.models.get(r) or "-", record.models.get(r) or "-"] for r in roles], num_from=99)
    if cmp.changed:
        changed = (f'<h3 id="changed-heading">Questions whose score or answer changed ({len(cmp.changed)})</h3>'
                   '<ol id="changed-list"></ol>')
    else:  # as the terminal says it: no heading over an empty list
        changed = '<p class="sub" id="no-changes">No question changed score or answer.</p>'
    return (
        f'<h2 id="compare">Compared with {e(other.run_id)}</h2>'
        f'<p class="sub">Deltas are this run ({e(record.run_id)}) minus the baseline ({e(other.run_id)}).</p>'
        f"{deltas}<h3>Models by role</h3>{models}{changed}"
    )


def _usage_table(record: RunRecord, table_id: str) -> str:
    if not record.usage:
        return '<p class="sub">no usage recorded</p>'
    return html_table(list(USAGE_HEADERS), usage_rows(record.usage), attrs=f' id="{table_id}"')


def cost_section(record: RunRecord, other: RunRecord | None = None) -> str:
    """Cost and time by phase; on a comparison, the baseline's cost too (both runs were paid for)."""
    parts = ['<h2 id="cost">Cost and time by phase</h2>']
    if other is not None:
        parts.append(f'<h3>This run {e(record.run_id)}</h3>')
    parts.append(_usage_table(record, "usage"))
    facts: list[tuple[str, Any]] = []
    for label, seconds in ((WALL_LABEL, record.phase_wall_seconds), (SUMMED_LABEL, record.phase_seconds)):
        for phase, secs in sorted(seconds.items(), key=lambda kv: phase_key(kv[0])):
            facts.append((f"{label}: {phase}", fmt_seconds(secs)))
    ran = [q for q in record.questions if q.outcome != "skipped"]
    if calls_text := agent_calls_text(ran):
        facts.append(("agent calls per question", calls_text))
    if facts:
        parts.append(kv_table(facts))
    if other is not None:
        parts.append(f'<h3>Baseline {e(other.run_id)}</h3>')
        parts.append(_usage_table(other, "usage-baseline"))
    if record.graph:
        parts.append("<h3>Graph per conversation</h3>")
        parts.append(html_table(["conversation", "entities", "relations", "chunks", "empty extractions",
                                 "seconds"], graph_rows(record.graph)))
    if record.snapshot_changes:
        items = "".join(f'<li class="mono">{e(q)}</li>' for q in record.snapshot_changes)
        parts.append(f"<h3>Answers changed from their snapshots ({len(record.snapshot_changes)})</h3><ul>{items}</ul>")
    return "".join(parts)


def systems_section(record: RunRecord) -> str:
    """Several systems side by side per ability, the ceiling marked as a measurement aid ("" for one system)."""
    if len(record.systems) < 2:
        return ""
    from .system_stats import AID_MARK, CEILING
    from .systems_text import SIDE_BY_SIDE_HEADERS, side_by_side_rows

    table = html_table(list(SIDE_BY_SIDE_HEADERS), side_by_side_rows(record.systems), num_from=2,
                       attrs=' id="systems"')
    notes = ["Rows follow the selected order (--beam-system); systems are not ranked."]
    if CEILING in record.systems:
        notes.append(f"{CEILING} is a {AID_MARK}: it answers from each question's own source messages, the ceiling "
                     "a perfect retriever would give this reader; never a system to rank. Lost to retrieval = "
                     "gold-evidence mean minus the system's; lost to reader+judge = 1.0 minus gold-evidence's.")
    board = ""
    if record.leaderboard:
        from .systems_text import LEADERBOARD_HEADERS, LEADERBOARD_NOTE, leaderboard_rows

        board = ('<h2 id="leaderboard">Leaderboard</h2>'
                 + html_table(list(LEADERBOARD_HEADERS), leaderboard_rows(record.leaderboard), num_from=2,
                              attrs=' id="ranked"')
                 + f'<p class="sub">{e("Ranked by mean score, ties by tokens per point; " + LEADERBOARD_NOTE)}.</p>')
    return (board + '<h2 id="systems-side-by-side">Systems side by side</h2>' + table
            + "".join(f'<p class="sub">{e(n)}</p>' for n in notes))


def judge_check_section(record: RunRecord) -> str:
    """The judge's calibration on BEAM's reference answers ("" when the run has none). Only our own
    text: figures, case ids and kinds; no reference answer or judge reason (they quote the chat)."""
    check = record.judge_check
    if check is None:
        return ""
    from ..scoring.judge_bars import RIGHT_ANSWERS_FAILED
    from .calibration_table import JUDGE_CHECK_HEADERS, bar_passed, judge_check_rows

    verdicts = {v.case_id: v for v in check.verdicts}
    wrong = [c for c in check.cases if c.id in verdicts and verdicts[c.id].judged_pass != c.expected_pass]
    notes = [f"{check.overall.n} cases built from BEAM's reference answers, "
             f"judged by {check.judge_model or 'the judge'} "
             f"(profile {check.profile}); 95% bootstrap intervals over questions. A false pass is an answer the "
             "judge passed that should fail; a false fail, a reference answer failed on its own rubric.",
             f"Bars: Cohen's kappa {check.bar:.2f}, {RIGHT_ANSWERS_FAILED} at most {check.fail_bar:.2f} "
             f"(here {_share(*check.right_answer_fails)}). "
             + _sentence(check.warning() or bar_passed(check))]
    if check.excluded:
        notes.append(f"{len(check.excluded)} reference cases were left out: the reference lacks the item or only "
                     "describes a compliant answer (each reason is in record.json).")
    listing = "".join(f'<li class="mono">{e(c.id)} (expected {"pass" if c.expected_pass else "fail"})</li>'
                      for c in wrong)
    return ('<h2 id="judge-check">How far to trust the judge</h2>'
            + html_table(list(JUDGE_CHECK_HEADERS), judge_check_rows(check), attrs=' id="judge-check-table"')
            + "".join(f'<p class="sub">{e(n)}</p>' for n in notes)
            + (f"<h3>Cases the judge got wrong ({len(wrong)})</h3><ul>{listing}</ul>" if wrong else ""))

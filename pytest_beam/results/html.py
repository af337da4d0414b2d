"""One self-contained HTML page per run (or per pair of runs): no network at view time.

Styles, script and the ability chart (SVG) are inline. The page's own text (settings, tables, the
chart) is escaped here with :func:`html.escape`; everything that quotes the chat (questions,
answers, judge reasons, traces, answer diffs) travels as JSON inside
``<script type="application/json">`` with ``<``, ``>`` and ``&`` written as ``\\u003c`` etc., and the
page's script writes it into the DOM with ``textContent`` only. A Content-Security-Policy allows
no network at all and only the page's own script (by its sha256), so even markup that slipped
through could not run or load anything.

The script also offers a self-test through the URL hash, used by the project's headless-browser
test: ``report.html#test=ability=event_ordering;open=conv1:event_ordering:0`` applies the
actions and writes the resulting state as JSON into ``<pre id="selftest">``.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import html
import json
import os
import re
import string
from importlib import resources
from pathlib import Path
from typing import Any

from ..files import atomic_write
from ..redaction import scrub_settings
from .schema import RunRecord
from .store import jsonable, normalize_step, with_traces
from .summary import (
    JUDGE_IS_AGENT_WARNING,
    graph_rows,
    ordered_roles,
    phase_key,
    fmt_seconds,
    usage_rows,
    changed_questions,
    comparison_warnings,
    fmt_delta,
    fmt_score,
    score_delta,
)

__all__ = ["render_html", "write_html", "answer_diff", "HTML_FILE"]

HTML_FILE = "report.html"
_APP_RE = re.compile(r'<script id="beam-app">(.*?)</script>', re.DOTALL)


class PageTemplate(string.Template):
    """report_template.html: ``${name}`` slots (see :data:`PAGE_SLOTS`), filled in one pass.

    ``string.Template`` never re-scans a substituted value, so nothing in a record (an answer that
    quotes ``${data}``) can address a slot; a stray ``$`` in the template fails loudly. A template
    engine would add a dependency for five slots and no logic.
    """


PAGE_SLOTS = frozenset({"csp", "version", "title", "body", "data"})


def page_template() -> str:
    return resources.files(__package__).joinpath("report_template.html").read_text(encoding="utf-8")


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _json_for_script(data: Any) -> str:
    """JSON that cannot end its ``<script>`` element or open markup: ``<``, ``>``, ``&`` and the JS
    line separators are written as unicode escapes (JSON.parse turns them back)."""
    text = json.dumps(jsonable(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (
        text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )


def answer_diff(before: str | None, after: str | None) -> list[list[str]]:
    """A line diff of two answers as ``[[op, line], ...]`` with op ``" "``, ``"-"`` or ``"+"``."""
    a = (before or "").splitlines()
    b = (after or "").splitlines()
    out: list[list[str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [[" ", line] for line in a[i1:i2]]
            continue
        out += [["-", line] for line in a[i1:i2]]
        out += [["+", line] for line in b[j1:j2]]
    return out


# ----------------------------------------------------------------------------- the data for the script

def _question_data(record: RunRecord) -> list[dict[str, Any]]:
    out = []
    for q in record.questions:
        d = q.model_dump(mode="json")
        d["trace"] = [normalize_step(step) for step in q.trace if isinstance(step, dict)]
        d["calls"] = q.calls
        d["known_bad"] = q.known_bad
        out.append(d)
    return out


def _compare_data(record: RunRecord, other: RunRecord) -> dict[str, Any]:
    changed: dict[str, Any] = {}
    order = []
    for qid, before, after in changed_questions(other, record):
        sa = before.score if before else None
        sb = after.score if after else None
        answer_changed = (before.answer or "") != (after.answer or "") if before and after else None
        changed[qid] = {
            "score_a": sa,
            "score_b": sb,
            "delta": score_delta(sa, sb),
            "answer_changed": answer_changed,
            "diff": answer_diff(before.answer, after.answer) if answer_changed else [],
            "only_in": None if before and after else ("this run" if after else "the baseline"),
        }
        order.append(qid)
    return {"base_run_id": other.run_id, "changed": changed, "order": order}


# ----------------------------------------------------------------------------- static parts

def _kv_table(rows: list[tuple[str, Any]], cls: str = "kv") -> str:
    body = "".join(
        f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows if v not in (None, "")
    )
    return f'<table class="{cls}"><tbody>{body}</tbody></table>'


def _table(headers: list[str], rows: list[list[Any]], num_from: int = 1, attrs: str = "") -> str:
    head = "".join(f'<th{" class=num" if i >= num_from else ""}>{_e(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i >= num_from else ""}>{_e(c)}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _chart(record: RunRecord, other: RunRecord | None) -> str:
    abilities = list(record.abilities.items())
    label_w, bar_w, text_w = 230, 440, 330
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
                     f'<title>pass score {_e(record.pass_score)}</title></line>')
    base = other.abilities if other else {}
    for i, (ability, s) in enumerate(abilities):
        y = top + i * row_h
        mean = s.mean if s.mean is not None else 0.0
        tip = (f"{ability}: mean {fmt_score(s.mean)} over {s.n} scored; excluding known-bad "
               f"{fmt_score(s.mean_excluding_known_bad)} over {s.n_excluding_known_bad}; "
               f"{s.errors} errors, {s.skipped} skipped")
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{_e(ability)}</text>')
        parts.append(f'<rect class="bar" data-ability="{_e(ability)}" x="{label_w}" y="{y + 3}" '
                     f'width="{mean * bar_w:.1f}" height="16"><title>{_e(tip)}</title></rect>')
        if ability in base and base[ability].mean is not None:
            b = base[ability]
            parts.append(f'<rect class="bar-base" data-ability="{_e(ability)}" x="{label_w}" y="{y + 22}" '
                         f'width="{b.mean * bar_w:.1f}" height="8"><title>{_e(f"baseline {other.run_id}: {fmt_score(b.mean)} (n={b.n})")}</title></rect>')
        excl = s.mean_excluding_known_bad
        if excl is not None and s.n_excluding_known_bad != s.n:
            x = label_w + excl * bar_w
            parts.append(f'<line class="kb-mark" x1="{x:.1f}" x2="{x:.1f}" y1="{y}" y2="{y + 22}">'
                         f'<title>mean excluding known-bad rubrics: {fmt_score(excl)}</title></line>')
        if s.mean is None:
            label = f"no score (n=0, {s.errors} errors, {s.skipped} skipped)"
        else:
            label = f"{fmt_score(s.mean)}  n={s.n}"
            if s.n_excluding_known_bad != s.n:
                label += f" \u00b7 excl. known-bad {fmt_score(excl)} (n={s.n_excluding_known_bad})"
            if s.errors or s.skipped:
                label += f" \u00b7 {s.errors} err, {s.skipped} skip"
        parts.append(f'<text x="{label_w + bar_w + 10}" y="{y + 15}">{_e(label)}</text>')
    ly = height - 14
    parts.append(f'<rect x="{label_w}" y="{ly - 9}" width="14" height="10" fill="#3b6fd6"/>')
    legend = "mean score"
    parts.append(f'<text x="{label_w + 20}" y="{ly}">{legend}</text>')
    parts.append(f'<line class="kb-mark" x1="{label_w + 120}" x2="{label_w + 120}" y1="{ly - 11}" y2="{ly + 2}"/>')
    parts.append(f'<text x="{label_w + 128}" y="{ly}">mean excluding known-bad rubrics</text>')
    if other:
        parts.append(f'<rect x="{label_w + 360}" y="{ly - 7}" width="14" height="7" fill="#c9d8f5"/>')
        parts.append(f'<text x="{label_w + 380}" y="{ly}">baseline {_e(other.run_id)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _warnings(record: RunRecord, other: RunRecord | None) -> list[str]:
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


def _settings_section(record: RunRecord) -> str:
    commit = None
    if record.commit:
        commit = record.commit + (" (dirty)" if record.dirty else "" if record.dirty is False else " (dirty: unknown)")
    facts = _kv_table([
        ("run id", record.run_id), ("started", record.started), ("finished", record.finished),
        ("mode", record.mode), ("scorer", record.scorer), ("data source", record.data_source),
        ("data revision", record.data_revision), ("commit", commit), ("package version", record.package_version),
        ("lockfile", record.lockfile_hash), ("pass score", record.pass_score), ("exit status", record.exit_status),
        ("judge is the agent's model", "yes" if record.judge_is_agent else "no"),
    ])
    models = _table(["role", "model"], [[r, record.models[r] or "-"] for r in ordered_roles(record.models)],
                    num_from=99, attrs=' id="models"')
    settings = json.dumps(jsonable(scrub_settings(record.settings)), indent=1, ensure_ascii=False, sort_keys=True)
    return (
        '<h2 id="settings">Run settings</h2><div class="grid">'
        f"<div>{facts}</div><div><h3>Models by role</h3>{models}</div></div>"
        f'<details><summary>all settings</summary><pre class="mono">{_e(settings)}</pre></details>'
    )


def _abilities_table(record: RunRecord) -> str:
    rows = []
    for ability, s in record.abilities.items():
        rows.append([ability, s.n, fmt_score(s.mean), fmt_score(s.mean_excluding_known_bad), s.passed, s.failed,
                     s.errors, s.skipped, ", ".join(f"{k}={v}" for k, v in s.flags.items())])
    o = record.overall
    rows.append(["overall", o.n, fmt_score(o.mean), fmt_score(o.mean_excluding_known_bad),
                 sum(s.passed for s in record.abilities.values()), sum(s.failed for s in record.abilities.values()),
                 o.errors, o.skipped, ""])
    return _table(["ability", "n", "mean", "mean excl. known-bad", "passed", "failed", "errors", "skipped", "flags"],
                  rows, attrs=' id="abilities"')


def _compare_section(record: RunRecord, other: RunRecord) -> str:
    rows = []
    empty_n = 0
    for ability in sorted(set(other.abilities) | set(record.abilities)):
        a, b = other.abilities.get(ability), record.abilities.get(ability)
        ma, mb = (a.mean if a else None), (b.mean if b else None)
        ea = a.mean_excluding_known_bad if a else None
        eb = b.mean_excluding_known_bad if b else None
        rows.append((ability, a.n if a else empty_n, ma, b.n if b else empty_n, mb, score_delta(ma, mb), score_delta(ea, eb)))
    oa, ob = other.overall, record.overall
    rows.append(("overall", oa.n, oa.mean, ob.n, ob.mean, score_delta(oa.mean, ob.mean),
                 score_delta(oa.mean_excluding_known_bad, ob.mean_excluding_known_bad)))

    def cls(d: float | None) -> str:
        return "pos" if d and d > 0 else "neg" if d and d < 0 else ""

    body = "".join(
        f'<tr data-ability="{_e(ab)}"><td>{_e(ab)}</td><td class="num">{na}</td><td class="num">{fmt_score(ma)}</td>'
        f'<td class="num">{nb}</td><td class="num">{fmt_score(mb)}</td>'
        f'<td class="num delta {cls(d)}" data-delta="{"" if d is None else d}">{fmt_delta(d)}</td>'
        f'<td class="num delta-excl {cls(dx)}">{fmt_delta(dx)}</td></tr>'
        for ab, na, ma, nb, mb, d, dx in rows
    )
    head = "".join(f"<th{' class=num' if i else ''}>{h}</th>" for i, h in enumerate(
        ["ability", "n before", "mean before", "n now", "mean now", "\u0394 mean", "\u0394 excl. known-bad"]))
    roles = ordered_roles({**other.models, **record.models})
    models = _table(["role", f"baseline {other.run_id}", f"this run {record.run_id}"],
                    [[r, other.models.get(r) or "-", record.models.get(r) or "-"] for r in roles], num_from=99)
    return (
        f'<h2 id="compare">Compared with {_e(other.run_id)}</h2>'
        f'<p class="sub">Deltas are this run ({_e(record.run_id)}) minus the baseline ({_e(other.run_id)}).</p>'
        f'<table id="deltas"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        f"<h3>Models by role</h3>{models}"
        '<h3>Questions whose score or answer changed</h3>'
        '<ol id="changed-list"></ol>'
    )


def _cost_section(record: RunRecord) -> str:
    parts = ['<h2 id="cost">Cost and time by phase</h2>']
    if record.usage:
        parts.append(_table(["phase", "calls", "cached", "prompt tokens", "completion tokens", "call seconds"],
                            usage_rows(record.usage), attrs=' id="usage"'))
    else:
        parts.append('<p class="sub">no usage recorded</p>')
    facts: list[tuple[str, Any]] = []
    for phase, secs in sorted(record.phase_seconds.items(), key=lambda kv: phase_key(kv[0])):
        facts.append((f"wall time: {phase}", fmt_seconds(secs)))
    ran = [q for q in record.questions if q.outcome != "skipped"]
    if ran:
        calls = [q.agent_calls for q in ran]
        facts.append(("agent calls per question", f"mean {sum(calls) / len(calls):.1f}, max {max(calls)}"))
    if facts:
        parts.append(_kv_table(facts))
    if record.graph:
        parts.append("<h3>Graph per conversation</h3>")
        parts.append(_table(["conversation", "entities", "relations", "chunks", "empty extractions", "cached", "seconds"],
                            graph_rows(record.graph)))
    if record.snapshot_changes:
        items = "".join(f'<li class="mono">{_e(q)}</li>' for q in record.snapshot_changes)
        parts.append(f"<h3>Answers changed from their snapshots ({len(record.snapshot_changes)})</h3><ul>{items}</ul>")
    return "".join(parts)


_LICENCE = (
    "Questions, answers and agent traces on this page quote the BEAM benchmark (Tavakoli et al., 2025, "
    "\u201cBeyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in LLMs\u201d, arXiv:2510.27246; "
    "data at github.com/mohammadtavakoli78/BEAM and huggingface.co/datasets/Mohammadta/BEAM), licensed "
    "CC BY-SA 4.0 (creativecommons.org/licenses/by-sa/4.0). This page, as an adaptation, is under the same "
    "licence; keep this attribution when sharing it. The judge prompts are ported from the BEAM authors' code (MIT)."
)


def _body(record: RunRecord, other: RunRecord | None) -> str:
    title = f"BEAM results \u2014 run {record.run_id}"
    when = " \u2192 ".join(x for x in (record.started, record.finished) if x)
    dot = " \u00b7 "
    parts = [
        f"<header><h1>{_e(title)}</h1>",
        f'<p class="sub">{_e(when)}{dot if when else ""}mode {_e(record.mode or "-")}{dot}scorer '
        f'{_e(record.scorer or "-")}{dot}overall {fmt_score(record.overall.mean)} over {record.overall.n} questions</p>',
        f'<p class="licence" id="licence">{_e(_LICENCE)}</p></header>',
    ]
    parts += [f'<div class="warning">{_e(w)}</div>' for w in _warnings(record, other)]
    parts.append(_settings_section(record))
    parts.append('<h2 id="scores">Mean score per ability</h2>')
    parts.append(_chart(record, other))
    parts.append(_abilities_table(record))
    parts.append('<p class="sub">Errors and skipped questions are counted apart, never as 0. '
                 "The excluding mean leaves out questions whose rubric is known to be bad.</p>")
    if other is not None:
        parts.append(_compare_section(record, other))
    parts.append(_cost_section(record))
    parts.append(
        '<h2 id="questions">Questions</h2>'
        '<div id="filters">'
        '<label>ability <select id="f-ability"></select></label>'
        '<label>flag <select id="f-flag"></select></label>'
        '<label>outcome <select id="f-outcome"></select></label>'
        '<label>search <input id="f-search" type="search" placeholder="id or question text"></label>'
        '<span id="count"></span></div>'
        '<table id="qtable"><thead><tr></tr></thead><tbody></tbody></table>'
        '<p class="sub">Click a question for its answer, rubric items, the judge\'s reasons and the agent\'s trace; '
        "click a column header to sort.</p>"
    )
    parts.append(f'<footer><p>{_e(_LICENCE)}</p><p>Made by pytest-beam {_e(record.package_version or "")}; '
                 "this file needs no network.</p></footer>")
    return "\n".join(parts)


def render_html(record: RunRecord, other: RunRecord | None = None) -> str:
    """The page for ``record``; with ``other``, compared with it (``other`` is the baseline: every
    delta is ``record`` minus ``other``)."""
    template = page_template()
    match = _APP_RE.search(template)
    assert match is not None, "report_template.html lost its beam-app script"
    app_hash = base64.b64encode(hashlib.sha256(match.group(1).encode("utf-8")).digest()).decode("ascii")
    csp = (f"default-src 'none'; script-src 'sha256-{app_hash}'; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    data: dict[str, Any] = {"run_id": record.run_id, "questions": _question_data(record)}
    if other is not None:
        data["compare"] = _compare_data(record, other)
    title = f"BEAM run {record.run_id}" + (f" vs {other.run_id}" if other is not None else "")
    return PageTemplate(template).substitute(
        csp=_e(csp), version=_e(record.package_version or ""), title=_e(title),
        body=_body(record, other), data=_json_for_script(data),
    )


def write_html(run_dir: str | os.PathLike[str], record: RunRecord, other: RunRecord | None = None,
               filename: str = HTML_FILE) -> Path:
    """Write the page beside the record (``run_dir/report.html``), traces filled from the trace file."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / filename
    atomic_write(path, render_html(with_traces(record, run_dir), other), fsync=True)
    return path

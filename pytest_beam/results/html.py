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
import json
import os
import re
import string
from importlib import resources
from pathlib import Path
from typing import Any

from ..files import atomic_write
from ..llm.wire import JsonObject
from .compare import Comparison, compare
from .html_parts import (
    abilities_table,
    chart,
    compare_section,
    cost_section,
    e,
    judge_check_section,
    settings_section,
    systems_section,
    warnings,
)
from .record_files import jsonable, normalize_step, with_traces
from .schema import RunRecord
from .text import fmt_interval, fmt_score, score_delta

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

def _question_data(record: RunRecord) -> list[JsonObject]:
    out = []
    for q in record.questions:
        d = q.model_dump(mode="json")
        d["trace"] = [normalize_step(step) for step in q.trace if isinstance(step, dict)]
        d["calls"] = q.calls
        d["known_bad"] = q.known_bad
        out.append(d)
    return out


def _compare_data(other: RunRecord, cmp: Comparison) -> JsonObject:
    changed: JsonObject = {}
    order = []
    for qid, before, after in cmp.changed:
        sa = before.score if before else None
        sb = after.score if after else None
        answer_changed = (before.answer or "") != (after.answer or "") if before and after else None
        changed[qid] = {
            "score_a": sa,
            "score_b": sb,
            "delta": score_delta(sa, sb),
            "answer_changed": answer_changed,
            "diff": answer_diff(before.answer, after.answer) if before and after and answer_changed else [],
            "only_in": None if before and after else ("this run" if after else "the baseline"),
        }
        order.append(qid)
    return {"base_run_id": other.run_id, "changed": changed, "order": order}


_LICENCE = (
    "Questions, answers and agent traces on this page quote the BEAM benchmark (Tavakoli et al., 2025, "
    "\u201cBeyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in LLMs\u201d, arXiv:2510.27246; "
    "data at github.com/mohammadtavakoli78/BEAM and huggingface.co/datasets/Mohammadta/BEAM), licensed "
    "CC BY-SA 4.0 (creativecommons.org/licenses/by-sa/4.0). This page, as an adaptation, is under the same "
    "licence; keep this attribution when sharing it. The judge prompts are ported from the BEAM authors' code (MIT)."
)


def _body(record: RunRecord, other: RunRecord | None, cmp: Comparison | None, force: bool) -> str:
    title = f"BEAM results \u2014 run {record.run_id}"
    when = " \u2192 ".join(x for x in (record.started, record.finished) if x)
    dot = " \u00b7 "
    parts = [
        f"<header><h1>{e(title)}</h1>",
        *([f'<p class="sub" id="run-names">{e(names)}</p>'] if (names := _names(record)) else []),
        f'<p class="sub">{e(when)}{dot if when else ""}mode {e(record.mode or "-")}{dot}scorer '
        f'{e(record.profile or "-")}{dot}overall {fmt_score(record.overall.mean)} '
        f'{fmt_interval(record.overall.interval)} over {record.overall.n} questions</p>',
        f'<p class="licence" id="licence">{e(_LICENCE)}</p></header>',
    ]
    parts += [f'<div class="warning">{e(w)}</div>' for w in warnings(record, other)]
    parts.append(settings_section(record))
    parts.append(systems_section(record))
    parts.append('<h2 id="scores">Mean score per ability</h2>')
    parts.append(chart(record, other))
    parts.append(abilities_table(record))
    parts.append('<p class="sub">Errors and skipped questions are counted apart, never as 0. '
                 "The excluding mean leaves out questions whose rubric is known to be bad.</p>")
    if other is not None:
        parts.append(compare_section(record, other, force=force, comparison=cmp))
    parts.append(judge_check_section(record))
    parts.append(cost_section(record, other))
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
    parts.append(f'<footer><p>{e(_LICENCE)}</p><p>Made by pytest-beam {e(record.package_version or "")}; '
                 "this file needs no network.</p></footer>")
    return "\n".join(parts)


def _names(record: RunRecord) -> str:
    bits = [f"label {record.label}" if record.label else "", f"system {record.system}" if record.system else "",
            f"re-judged from run {record.rejudged_from}" if record.rejudged_from else ""]
    return " \u00b7 ".join(b for b in bits if b)


def render_html(record: RunRecord, other: RunRecord | None = None, *, force: bool = False) -> str:
    """The page for ``record``; with ``other``, compared with it (``other`` is the baseline: every
    delta is ``record`` minus ``other``). Deltas between different scoring profiles need ``force``."""
    template = page_template()
    match = _APP_RE.search(template)
    assert match is not None, "report_template.html lost its beam-app script"
    app_hash = base64.b64encode(hashlib.sha256(match.group(1).encode("utf-8")).digest()).decode("ascii")
    csp = (f"default-src 'none'; script-src 'sha256-{app_hash}'; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    data: JsonObject = {"run_id": record.run_id, "questions": _question_data(record)}
    cmp = compare(other, record) if other is not None else None
    if other is not None and cmp is not None:
        data["compare"] = _compare_data(other, cmp)
    title = f"BEAM run {record.run_id}" + (f" vs {other.run_id}" if other is not None else "")
    return PageTemplate(template).substitute(
        csp=e(csp), version=e(record.package_version or ""), title=e(title),
        body=_body(record, other, cmp, force), data=_json_for_script(data),
    )


def write_html(run_dir: str | os.PathLike[str], record: RunRecord, other: RunRecord | None = None,
               filename: str = HTML_FILE) -> Path:
    """Write the page beside the record (``run_dir/report.html``), traces filled from the trace file."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / filename
    atomic_write(path, render_html(with_traces(record, run_dir), other), fsync=True)
    return path

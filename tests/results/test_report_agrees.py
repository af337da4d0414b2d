"""The report agrees with itself (issue 17 point 9): each defect seen in headless Chromium.

Each page is loaded with ``chromium --dump-dom`` (the page's own script has run, and with
``#test=open=ID`` it has opened that question's panel); the dumped DOM is parsed and asserted on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_beam.llm import Usage
from pytest_beam.results.comparison_text import render_comparison
from pytest_beam.results.html import render_html
from pytest_beam.results.question_record import all_calls
from pytest_beam.scoring.scores import ItemScore
from tests.results.dom import Node, parse
from tests.results.factory import run_record
from tests.results.test_html import A_ID, B_ID, chromium, needs_chromium, page_url, record_b

IE0 = "conv1:information_extraction:0"


def dom(tmp_path: Path, page_html: str, **actions: str) -> Node:
    page = tmp_path / f"page-{len(list(tmp_path.glob('page-*.html')))}.html"
    page.write_text(page_html, encoding="utf-8")
    proc = chromium(tmp_path, "--dump-dom", page_url(page, **actions) if actions else page.resolve().as_uri())
    assert "<main>" in proc.stdout, proc.stderr[-3000:]
    return parse(proc.stdout)


def detail_value(root: Node, label: str) -> str:
    panel = root.find("aside", id="detail")
    for tr in panel.find_all("tr"):
        th = tr.find("th")
        if th is not None and th.text == label:
            return tr.find("td").text
    raise AssertionError(f"no {label!r} row in the panel")


def with_question(record, qid: str, **update):
    return record.model_copy(update={"questions": [q.model_copy(update=update) if q.id == qid else q
                                                   for q in record.questions]})


@needs_chromium
def test_cost_table_has_one_header_per_cell(tmp_path):
    root = dom(tmp_path, render_html(run_record(A_ID)))
    usage = root.find("table", id="usage")
    headers = [th.text for th in usage.find("thead").find_all("th")]
    assert headers == ["phase", "calls", "cached/replayed", "their tok", "prompt tok", "completion tok", "call s"]
    rows = usage.find("tbody").find_all("tr")
    assert [len(r.find_all("td")) for r in rows] == [7] * 5  # four phases and the total
    judge = next(r for r in rows if r.find("td").text == "judge")
    assert [td.text for td in judge.find_all("td")] == ["judge", "7", "3", "0", "4,200", "280", "4.2"]


@needs_chromium
def test_no_changed_heading_when_nothing_changed(tmp_path):
    a, b = run_record(A_ID), run_record(B_ID, started="2025-01-02T00:00:00+00:00")
    assert render_comparison(a, b)[-1] == "no question changed score or answer"
    root = dom(tmp_path, render_html(b, a))
    compare = root.find("h2", id="compare")
    assert compare is not None
    assert not any("changed" in h.text for h in root.find_all("h3"))
    assert root.find("ol", id="changed-list") is None
    assert root.find(id="no-changes").text == "No question changed score or answer."
    # and when one did change, the heading counts it and the list holds it
    root = dom(tmp_path, render_html(record_b(), a))
    assert root.find("h3", id="changed-heading").text == "Questions whose score or answer changed (1)"
    assert [li.attrs["data-id"] for li in root.find("ol", id="changed-list").find_all("li")] == [IE0]


@needs_chromium
def test_a_replayed_question_shows_the_same_calls_in_its_panel_and_the_table(tmp_path):
    replayed = {"agent": Usage(replayed_calls=2, cached_tokens=3780),
                "judge": Usage(replayed_calls=1, cached_tokens=640)}
    record = with_question(run_record(A_ID), IE0, usage=replayed)
    assert all_calls(replayed) == 3
    root = dom(tmp_path, render_html(record), open=IE0)
    row = next(tr for tr in root.find("table", id="qtable").find("tbody").find_all("tr") if tr.attrs["data-id"] == IE0)
    assert row.find_all("td")[6].text == "3"
    assert detail_value(root, "model calls") == "3"
    usage = root.find("aside", id="detail").find("table", cls="q-usage")
    assert [th.text for th in usage.find_all("th")][:5] == ["role", "calls", "live", "cached", "replayed"]
    cells = {
        tr.find("td").text: [td.text for td in tr.find_all("td")][1:5] for tr in usage.find("tbody").find_all("tr")
    }
    assert cells == {"agent": ["2", "0", "0", "2"], "judge": ["1", "0", "0", "1"]}


@needs_chromium
def test_tool_errors_show_their_text(tmp_path):
    trace = [
        {"kind": "tool", "tool": "cypher", "arguments": {"query": "LOAD CSV"}, "result_chars": 42, "message_ids": [],
         "error": "Cypher error: LOAD CSV is not allowed here."},
        {"type": "tool", "tool": "search_messages", "arguments": "{bad", "result_chars": 60, "message_ids": [],
         "error": True, "error_text": "Error: the arguments are not valid JSON (Expecting value)."},
        {"type": "tool", "tool": "read_messages", "arguments": {}, "result_chars": 10, "message_ids": [],
         "error": True},
    ]
    root = dom(tmp_path, render_html(with_question(run_record(A_ID), IE0, trace=trace)), open=IE0)
    errors = [n.text for n in root.find("aside", id="detail").find_all(cls="step-error")]
    assert errors == ["error: Cypher error: LOAD CSV is not allowed here.",
                      "error: Error: the arguments are not valid JSON (Expecting value).",
                      "error: (no error text was recorded)"]


@needs_chromium
def test_an_unparsed_judge_reply_shows_the_reply(tmp_path):
    items = [ItemScore(rubric_item="Names the dog Biscuit", score=0.0, judge_score=None, reason=None,
                       reply="I would give this a solid yes, the dog is Biscuit", parsed=False),
             ItemScore(rubric_item="Says it is a dog", score=1.0, judge_score=1.0, reason="It does.",
                       reply='{"score": 1.0, "reason": "It does."}', parsed=True)]
    root = dom(tmp_path, render_html(with_question(run_record(A_ID), IE0, items=items)), open=IE0)
    reasons = [td.text for td in root.find("aside", id="detail").find_all("td", cls="reason")]
    assert reasons == ["reply did not parse; the judge replied: I would give this a solid yes, the dog is Biscuit",
                       "It does."]


@needs_chromium
def test_a_comparison_shows_both_runs_cost(tmp_path):
    a = run_record(A_ID)
    b = record_b().model_copy(update={"usage": {"agent": Usage(calls=4, prompt_tokens=7000, completion_tokens=300)}})
    text = "\n".join(render_comparison(a, b))
    assert "model calls: A 33 (56,990 tokens), B 4 (7,300 tokens)" in text
    root = dom(tmp_path, render_html(b, a))
    cost = [h.text for h in root.find_all("h3") if h.text.startswith(("This run", "Baseline"))]
    assert cost == [f"This run {B_ID}", f"Baseline {A_ID}"]
    mine = root.find("table", id="usage").find("tbody").find_all("tr")
    base = root.find("table", id="usage-baseline").find("tbody").find_all("tr")
    assert [td.text for td in mine[-1].find_all("td")][:2] == ["agent", "4"]
    assert [td.text for td in base[-1].find_all("td")][:2] == ["total", "33"]


@needs_chromium
def test_the_page_shows_intervals_and_marks_distinguishable_deltas(tmp_path):
    from tests.results.factory import spread_record
    from tests.results.test_compare_gate import BASE, DROPPED

    a, b = spread_record("A", BASE), spread_record("B", DROPPED)
    root = dom(tmp_path, render_html(b, a))
    abilities = {tr.find_all("td")[0].text: tr.find_all("td")[3].text
                 for tr in root.find("table", id="abilities").find("tbody").find_all("tr")}
    assert abilities["temporal_reasoning"] == "[0.000, 0.000]"
    deltas = {tr.attrs["data-ability"]: tr.find("td", cls="delta-interval")
              for tr in root.find("table", id="deltas").find("tbody").find_all("tr")}
    assert deltas["temporal_reasoning"].text == "[-0.500, -0.500] *"
    assert deltas["temporal_reasoning"].attrs["data-distinguishable"] == "yes"
    assert deltas["abstention"].attrs["data-distinguishable"] == "no"
    # different profiles: no delta table at all unless forced
    up = spread_record("B", DROPPED, scorer="upstream")
    root = dom(tmp_path, render_html(up, a))
    assert root.find("table", id="deltas") is None
    assert "different profiles (default -> upstream)" in root.find(id="no-deltas").text
    assert dom(tmp_path, render_html(up, a, force=True)).find("table", id="deltas") is not None


def test_all_calls_counts_live_cached_and_replayed():
    assert all_calls({"agent": Usage(calls=1, cached_calls=2, replayed_calls=3), "judge": Usage()}) == 6
    assert all_calls({}) == 0


@pytest.fixture(autouse=True)
def _no_artifacts(monkeypatch, tmp_path):
    monkeypatch.setenv("BEAM_ARTIFACTS", str(tmp_path / "artifacts"))


@needs_chromium
def test_the_chart_draws_each_interval_as_a_whisker(tmp_path):
    from tests.results.factory import spread_record

    scores = {f"conv{c}:abstention:0": float(c % 2) for c in range(1, 7)}
    r = spread_record("A", scores)
    iv = r.abilities["abstention"].interval
    root = dom(tmp_path, render_html(r))
    whisker = root.find("line", cls="ci")
    assert whisker.attrs["data-ability"] == "abstention"
    # the chart's bars start at x=230 and are 440 wide for a score of 1
    assert (float(whisker.attrs["x1"]), float(whisker.attrs["x2"])) == (
        round(230 + iv.low * 440, 1), round(230 + iv.high * 440, 1))
    assert whisker.find("title").text == f"95% interval [{iv.low:.3f}, {iv.high:.3f}]"


@needs_chromium
def test_the_charts_labels_fit_inside_the_chart(tmp_path):
    """At 1280 px the right-hand labels ('0.800 [0.675, 0.925] n=40 · excl. known-bad 0.784 (n=37)')
    ran past the chart's edge and were cut off."""
    from pytest_beam.results.stats import MeanInterval

    record = run_record(A_ID)
    longest = {name: s.model_copy(update={"mean": 0.8, "n": 400,
                                          "interval": MeanInterval(low=0.675, high=0.925, level=0.95, clusters=20,
                                                                   resamples=10000, seed=1),
                                          "mean_excluding_known_bad": 0.784, "n_excluding_known_bad": 372,
                                          "errors": 12, "skipped": 3})
               for name, s in record.abilities.items()}
    measure = """<script>(() => {
      const svg = document.getElementById('ability-chart');
      const width = svg.viewBox.baseVal.width;
      const over = [...svg.querySelectorAll('text')].map(t => t.getBBox()).filter(b => b.x + b.width > width + 0.5);
      const out = document.createElement('pre'); out.id = 'overflow';
      out.textContent = String(over.length) + ' of ' + svg.querySelectorAll('text').length;
      document.body.appendChild(out);
    })();</script></body>"""
    head, _, tail = render_html(record.model_copy(update={"abilities": longest})).rpartition("</body>")
    import re

    # the page's CSP admits only its own script; this measuring script is the test's
    page_html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", head + measure + tail)
    root = dom(tmp_path, page_html)
    text = root.find("pre", id="overflow").text
    assert text.startswith("0 of "), f"labels past the chart's right edge: {text}"

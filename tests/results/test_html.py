"""The HTML report: static checks, and the page driven in headless Chromium (issue 9).

The Chromium tests use no browser-automation library: the page's script has a self-test mode
driven by the URL hash (``#test=ability=X;open=ID``) that applies the actions on load and writes
the resulting state as JSON into ``<pre id="selftest">``; ``chromium --dump-dom`` prints the DOM
after load and the test reads that JSON back.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from pytest_beam.results.html import PAGE_SLOTS, PageTemplate, answer_diff, page_template, render_html, write_html
from pytest_beam.results.record_files import write_record
from tests.results.factory import XSS_IMG, XSS_SCRIPT, run_record

REPO = Path(__file__).resolve().parents[2]
A_ID = "20250101T000000Z-aaaa"
B_ID = "20250102T000000Z-bbbb"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                "--hide-scrollbars", "--mute-audio"]


def record_b():
    return run_record(B_ID,
                      answer_ie0="The dog is called Rex.\nYou also pasted <script>window.__pwned=3</script> once.",
                      score_ie0=0.0, started="2025-01-02T00:00:00+00:00")


def artifacts_dir() -> Path:
    d = Path(os.environ.get("BEAM_ARTIFACTS") or REPO / "artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


def page_url(path: Path, **actions: str) -> str:
    test = ";".join(f"{k}={quote(v, safe='')}" for k, v in actions.items())
    return path.resolve().as_uri() + "#test=" + test


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"chrome-profile-{len(list(tmp_path.glob('chrome-profile-*')))}"
    return subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


def selftest(tmp_path: Path, page: Path, **actions: str) -> dict:
    proc = chromium(tmp_path, "--dump-dom", page_url(page, **actions))
    m = re.search(r'<pre id="selftest">(.*?)</pre>', proc.stdout, re.DOTALL)
    assert m and m.group(1), f"no self-test output (exit {proc.returncode}); stderr:\n{proc.stderr[-4000:]}"
    return json.loads(htmllib.unescape(m.group(1)))


@pytest.fixture
def one_page(tmp_path: Path) -> Path:
    page = tmp_path / "one.html"
    page.write_text(render_html(run_record(A_ID)), encoding="utf-8")
    return page


@pytest.fixture
def two_page(tmp_path: Path) -> Path:
    page = tmp_path / "two.html"
    page.write_text(render_html(record_b(), run_record(A_ID)), encoding="utf-8")
    return page


# ----------------------------------------------------------------------------- static

def test_chat_text_only_travels_as_escaped_json():
    page = render_html(record_b(), run_record(A_ID))
    assert "window.__pwned" in page  # the text is there...
    assert "<script>window" not in page and "<img src=x" not in page  # ...but never as markup
    assert page.count("</script>") == 2  # the data block and the page's own script
    data = re.search(r'<script type="application/json" id="beam-data">(.*?)</script>', page, re.DOTALL).group(1)
    assert "<" not in data and ">" not in data and "&" not in data
    assert "\\u003cscript\\u003ewindow.__pwned=1\\u003c/script\\u003e" in data
    parsed = json.loads(data)
    assert parsed["questions"][0]["answer"].endswith("<script>window.__pwned=3</script> once.")


def test_page_is_self_contained_and_locked_down():
    page = render_html(run_record(A_ID))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src &#x27;none&#x27;" in csp and "script-src &#x27;sha256-" in csp
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "CC BY-SA 4.0" in page and "Tavakoli" in page
    assert "the judge is the agent&#x27;s model: scores are biased upward" in page


def test_run_id_cannot_inject_markup():
    evil = run_record('x"><script>alert(1)</script>@@DATA@@${data}$body')
    page = render_html(evil)
    assert "<script>alert(1)" not in page
    assert page.count("</script>") == 2
    assert "${data}$body" in page  # a value is never re-scanned for a slot


def test_template_has_exactly_the_page_slots():
    template = PageTemplate(page_template())
    assert template.is_valid()
    assert set(template.get_identifiers()) == PAGE_SLOTS


def test_answer_diff():
    assert answer_diff("a\nb\nc", "a\nB\nc") == [[" ", "a"], ["-", "b"], ["+", "B"], [" ", "c"]]
    assert answer_diff(None, "x") == [["+", "x"]]


def test_write_html_beside_the_record_with_traces_from_the_trace_file(tmp_path):
    r = run_record(A_ID)
    lines = [{"question_id": q.id, **s} for q in r.questions for s in q.trace]
    slim = r.model_copy(update={"questions": [q.model_copy(update={"trace": []}) for q in r.questions]})
    run_dir = tmp_path / "results" / A_ID
    write_record(run_dir, slim, lines)
    path = write_html(run_dir, slim)
    assert path == run_dir / "report.html"
    data = re.search(r'id="beam-data">(.*?)</script>', path.read_text(), re.DOTALL).group(1)
    assert json.loads(data)["questions"][0]["trace"][1]["tool"] == "search_messages"


# ----------------------------------------------------------------------------- in Chromium

@needs_chromium
def test_chart_filter_detail_and_no_script_runs(tmp_path, one_page):
    st = selftest(tmp_path, one_page, ability="event_ordering")
    assert st["bars"] == 2
    assert sorted(st["bar_abilities"]) == ["event_ordering", "information_extraction"]
    assert st["visible_rows"] == ["conv1:event_ordering:0"]

    st = selftest(tmp_path, one_page, ability="information_extraction", open="conv1:information_extraction:0")
    assert st["visible_rows"] == ["conv1:information_extraction:0", "conv1:information_extraction:1"]
    d = st["detail"]
    assert d["id"] == "conv1:information_extraction:0"
    assert d["items"] == ["Names the dog Biscuit"] and d["item_scores"] == ["1.0"]
    assert d["reasons"] == ["The answer says Biscuit."]
    assert d["steps"] == ["model", "tool: search_messages", "tool: read_messages"]
    assert d["step_ids"] == ["12", "40", "13"]
    assert d["highlighted_ids"] == ["12", "13"]  # the question's source ids, not m40
    # the <script> and <img> in the chat show as text, and nothing of them ran or loaded
    assert XSS_SCRIPT in d["question"] and XSS_SCRIPT in d["answer"] and XSS_IMG in d["answer"]
    assert st["pwned"] is None
    assert st["images"] == 0 and st["scripts"] == 2


@needs_chromium
def test_agent_style_steps(tmp_path, one_page):
    d = selftest(tmp_path, one_page, open="conv1:information_extraction:1")["detail"]
    assert d["steps"] == ["model", "tool: search_messages", "note: budget_warning"]
    assert d["step_ids"] == ["50", "7"] and d["highlighted_ids"] == ["50"]
    assert d["items"] == ["Says Lisbon", "Mentions the move in April"]


@needs_chromium
def test_event_ordering_detail(tmp_path, one_page):
    d = selftest(tmp_path, one_page, open="conv1:event_ordering:0")["detail"]
    assert d["reference_order"] == ["Plan the trip", "Book the flight", "Pack", "Say goodbye"]
    assert d["answer_order"] == ["Plan the trip", "Pack", "Book the flight", "Bought a hat"]
    assert len(d["event_lines"]) == 4
    assert d["event_lines"][1] == "2Packed the bagsPack"
    assert d["event_lines"][3] == "4Bought a hat(no rubric event)"
    assert d["items"] == []


@needs_chromium
def test_flag_outcome_filters_and_sorting(tmp_path, one_page):
    assert selftest(tmp_path, one_page, flag="known_bad_rubric")["visible_rows"] == ["conv1:information_extraction:1"]
    assert selftest(tmp_path, one_page, flag="(no flag)")["visible_rows"] == ["conv1:information_extraction:0"]
    assert selftest(tmp_path, one_page, outcome="xfailed")["visible_rows"] == ["conv1:information_extraction:1"]
    assert selftest(tmp_path, one_page, sort="score:desc")["visible_rows"][0] == "conv1:information_extraction:0"
    assert selftest(tmp_path, one_page, sort="evidence_recall")["visible_rows"] == [
        "conv1:event_ordering:0", "conv1:information_extraction:1", "conv1:information_extraction:0"]
    assert selftest(tmp_path, one_page, sort="id")["visible_rows"] == [
        "conv1:event_ordering:0", "conv1:information_extraction:0", "conv1:information_extraction:1"]


@needs_chromium
def test_two_record_view_shows_the_right_deltas(tmp_path, two_page):
    st = selftest(tmp_path, two_page, open="conv1:information_extraction:0")
    assert {d["ability"]: d["delta"] for d in st["deltas"]} == {
        "event_ordering": "+0.000", "information_extraction": "-0.500", "overall": "-0.333"}
    assert st["changed"] == ["conv1:information_extraction:0"]
    assert st["changed_diff_lines"] == [
        "del:Your sister's dog is called Biscuit.",
        f"del:You also pasted {XSS_SCRIPT} and {XSS_IMG} once.",
        "add:The dog is called Rex.",
        "add:You also pasted <script>window.__pwned=3</script> once.",
    ]
    assert st["detail"]["diff"] == 4
    assert st["pwned"] is None and st["images"] == 0
    assert st["bars"] == 2


@needs_chromium
def test_warning_when_models_or_scorers_differ(tmp_path):
    page = tmp_path / "mixed.html"
    other = run_record(B_ID, agent_model="llama-3.1-8b", judge_model="gpt-4.1-mini", scorer="upstream")
    page.write_text(render_html(other, run_record(A_ID)), encoding="utf-8")
    warnings = selftest(tmp_path, page)["warnings"]
    assert any("different models" in w and "judge: qwen2.5-7b -> gpt-4.1-mini" in w for w in warnings)
    assert any("different scorers (default -> upstream)" in w for w in warnings)
    assert not any(w.startswith("the judge is the agent") for w in warnings)


@needs_chromium
def test_screenshot_artifact(tmp_path, two_page):
    shot = artifacts_dir() / "beam-report.png"
    if shot.exists():
        shot.unlink()
    url = page_url(two_page, open="conv1:information_extraction:0")
    proc = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1600", url)
    assert shot.exists() and shot.stat().st_size > 10_000, proc.stderr[-4000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_empty_and_all_error_records_render():
    from pytest_beam.results.build import with_aggregates
    from pytest_beam.results.question_record import QuestionRecord
    from pytest_beam.results.schema import RunRecord

    assert 'id="ability-chart"' in render_html(RunRecord(run_id="empty"))
    errored = RunRecord(run_id="err", questions=[
        QuestionRecord(id="c:a:0", ability="a", outcome="error", error="Neo4j unreachable"),
        QuestionRecord(id="c:b:0", ability="b", score=0.5, outcome="passed")])
    page = render_html(with_aggregates(errored))
    assert page.count('<rect class="bar"') == 2
    assert "no score (n=0, 1 errors, 0 skipped)" in page

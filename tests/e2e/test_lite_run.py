"""The lite set end to end: real local Neo4j, the scripted model, the whole plugin in a subprocess.

One module-scoped scripted server; each run is a separate pytest process (as a user runs it),
with its own Neo4j started by the local provider.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.e2e.scripted_beam import LITE_ANSWERS, ScriptedBeamModel
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
IDS = ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]


@pytest.fixture(scope="module")
def scripted():
    model = ScriptedBeamModel()
    with ScriptedModelServer(responder=model) as server:
        yield model, server


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("beam-project")
    (path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    return path


KEY = "sk-beam-test-0123456789-distinctive-key"


def run(project, server, beam_data_dir, *args, env=None):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
           f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
           "--beam-neo4j=local", "--beam-cache=off", f"--beam-results={project / 'results'}", *args]
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def ability_rows(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines()
            if re.match(r"^\s*(information_extraction|multi_session_reasoning)\b", line)]


def test_lite_run_end_to_end(scripted, project, beam_data_dir):
    model, server = scripted
    first = run(project, server, beam_data_dir, "--snapshot-update", f"--junitxml={project / 'one.xml'}", "--beam-html",
                "--beam-record-mode=all", f"--beam-cassette={project / 'lite.jsonl'}", env={"BEAM_API_KEY": KEY})
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert "2 passed" in first.stdout

    # the key went to the server, and into no output: terminal, record, trace, cassette, JUnit XML
    assert any(KEY in (r.headers.get("authorization") or "") for r in server.requests)
    assert KEY not in first.stdout + first.stderr
    written = [p for p in project.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"record.json", "trace.jsonl.gz", "lite.jsonl", "one.xml"}
    for path in written:
        data = path.read_bytes()
        if path.suffix == ".gz":
            import gzip
            data = gzip.decompress(data)
        assert KEY.encode() not in data, path

    # user properties in JUnit XML
    cases = {c.get("name"): c for c in ET.parse(project / "one.xml").getroot().iter("testcase")}
    assert sorted(cases) == sorted(f"test_question[{i}]" for i in IDS)
    assert {n: c.get("classname") for n, c in cases.items()} == {
        f"test_question[{i}]": "beam." + i.split(":")[1] for i in IDS}  # a dashboard groups by ability
    for case in cases.values():
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert float(props["score"]) == 1.0
        assert float(props["evidence_recall"]) == 1.0
        # read and answer (the harness searched first), a verdict
        assert int(props["calls"]) >= 3 and int(props["prompt_tokens"]) > 0
        assert json.loads(props["item_0"])["score"] == 1.0
        assert "beam_result" in props

    # the summary, the record, the report command
    rows = ability_rows(first.stdout)
    assert len(rows) == 2 and all("1.000" in r for r in rows), first.stdout[-3000:]
    assert "the judge is the agent's model" in first.stdout
    record_files = list((project / "results").glob("*/record.json"))
    assert len(record_files) == 1
    record = json.loads(record_files[0].read_text())
    assert sorted(q["id"] for q in record["questions"]) == IDS
    assert record["usage"]["extraction"]["calls"] >= 1 and record["usage"]["judge"]["calls"] == 3
    # --beam-judge-check's default (auto) leaves the check out for a judge that is not the embedded model
    assert "judge check" not in first.stdout and record.get("judge_check") is None
    assert (project / "results" / "NOTICE").exists()
    report = subprocess.run([sys.executable, "-m", "pytest_beam", "report", "--results", str(project / "results")],
                            capture_output=True, text=True, cwd=project)
    assert report.returncode == 0 and ability_rows(report.stdout) == rows

    # the HTML page of this run, driven in headless Chromium (issue 9)
    check_html_page(record_files[0].parent, project)

    # snapshots: one readable text file per question
    snap = project / "snapshots" / "conv17__information_extraction__0.txt"
    assert snap.read_text().strip() == LITE_ANSWERS[
        "Which days did I say my kids have their afterschool activities at their school?"]

    # the same run under xdist gives the same per-ability summary
    second = run(project, server, beam_data_dir, "-n", "2", "--beam-snapshot=assert",
                 f"--junitxml={project / 'two.xml'}")
    assert second.returncode == 0, second.stdout[-4000:]
    assert sorted(c.get("classname") for c in ET.parse(project / "two.xml").getroot().iter("testcase")) == [
        "beam.information_extraction", "beam.multi_session_reasoning"]  # the xdist controller writes the XML
    assert ability_rows(second.stdout) == rows

    # one changed answer: assert mode fails with a diff, report mode lists it and passes
    question = "How many scenes had I filmed in total by July 5 and how many were left to film after that?"
    model.answers[question] = "You had filmed 12 scenes by July 5 and had 4 scenes left to film."
    try:
        strict = run(project, server, beam_data_dir, "--beam-snapshot=assert")
        assert strict.returncode == 1
        assert "1 failed, 1 passed" in strict.stdout
        assert "You had filmed 12 scenes by July 5" in strict.stdout and "By July 5 you had filmed" in strict.stdout
        lenient = run(project, server, beam_data_dir, "--beam-snapshot=report")
        assert lenient.returncode == 0, lenient.stdout[-3000:]
        assert "answer changed: conv17:multi_session_reasoning:0" in lenient.stdout
        assert "+You had filmed 12 scenes by July 5" in lenient.stdout
    finally:
        model.answers[question] = LITE_ANSWERS[question]


def check_html_page(run_dir, tmp):
    from pytest_beam.results.html import render_html
    from pytest_beam.results.record_files import read_record
    from tests.results.test_html import CHROMIUM, artifacts_dir, chromium, page_url, selftest

    page = run_dir / "report.html"
    assert page.exists() and "conv17:multi_session_reasoning:0" in page.read_text()
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    st = selftest(tmp, page, ability="information_extraction", open="conv17:information_extraction:0")
    assert st["bars"] == 2 and st["visible_rows"] == ["conv17:information_extraction:0"]
    detail = st["detail"]
    assert detail["items"] == ["LLM response should state: on Tuesdays and Thursdays"]
    assert detail["item_scores"] == ["1.0"]
    assert [s for s in detail["steps"] if s.startswith("tool:")] == ["tool: hybrid_search", "tool: read_messages"]
    assert "18" in detail["highlighted_ids"]
    chromium(tmp, "--screenshot=" + str(artifacts_dir() / "beam-report-lite-run.png"), "--window-size=1280,1600",
             page_url(page, open="conv17:multi_session_reasoning:0"))
    # chat-derived text is shown, never run: put a script into this run's answer and render again
    record = read_record(run_dir)
    hostile = record.questions[0].model_copy(update={"answer": "<script>window.__pwned=1</script> Tuesdays"})
    record = record.model_copy(update={"questions": [hostile, *record.questions[1:]]})
    evil = tmp / "evil.html"
    evil.write_text(render_html(record), encoding="utf-8")
    st = selftest(tmp, evil, open=hostile.id)
    assert st["pwned"] is None and "<script>window.__pwned=1</script>" in st["detail"]["answer"]

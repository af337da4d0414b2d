"""Issue 25 points 1 and 4: the judge's calibration inside a run, and `pytest-beam judge-check`.

Real local Neo4j, the whole plugin in a subprocess, the scripted model as the declared model
double: its judge passes an item when the answer holds the item's key words, which on the lite
set passes exactly the three reference cases, so every count below is exact.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]


@pytest.fixture
def scripted():
    with ScriptedModelServer(responder=ScriptedBeamModel()) as server:
        yield server


def _run(tmp_path: Path, server: ScriptedModelServer, beam_data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
           f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
           "--beam-neo4j=local", "--beam-cache=off", f"--beam-results={tmp_path / 'results'}", *args]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=dict(os.environ))


def _record(tmp_path: Path) -> dict:
    (path,) = (tmp_path / "results").glob("*/record.json")
    return json.loads(path.read_text())


def test_a_run_with_the_judge_check_shows_it_beside_the_scores(tmp_path, scripted, beam_data_dir):
    done = _run(tmp_path, scripted, beam_data_dir, "--beam-judge-check=all", "--beam-html")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    out = done.stdout
    summary = out[out.index("pytest-beam summary"):]
    assert "judge check: 9 cases built from BEAM's reference answers, judged by scripted" in summary
    overall = next(line for line in summary.splitlines() if line.strip().startswith("overall") and "/" in line)
    assert overall.split()[:4] == ["overall", "9", "1.00", "[1.00,"]
    assert "0/6" in overall and "0/3" in overall  # no false pass of 6, no false fail of 3
    assert "right answers failed (references on their own items, 'I don't know' to abstention): 0/3 (0.00; bar 0.15)" \
        in summary
    assert "the judge is above the bar (kappa 1.00 >= 0.60, right answers failed 0.00 <= 0.15)" in summary
    record = _record(tmp_path)
    check = record["judge_check"]
    assert [v["judged_pass"] for v in check["verdicts"]] == [c["expected_pass"] for c in check["cases"]]
    assert check["overall"]["kappa"] == 1.0 and len(check["cases"]) == 9
    # the check's calls are metered apart from the questions' judge calls
    assert record["usage"]["judge check"]["calls"] == 9
    assert record["usage"]["judge"]["calls"] == 3  # the questions' own three rubric items
    page = (next((tmp_path / "results").glob("*/report.html"))).read_text()
    assert 'id="judge-check-table"' in page and "How far to trust the judge" in page
    assert "to abstention) at most 0.15 (here 0/3, 0.00)" in page
    # the page gives the summary's verdict, as a sentence of its own
    assert html.escape("The judge is above the bar (kappa 1.00 >= 0.60, right answers failed 0.00 <= 0.15).") in page


def test_a_typo_in_the_judge_check_is_a_usage_error(tmp_path, scripted, beam_data_dir):
    done = _run(tmp_path, scripted, beam_data_dir, "--beam-judge-check=sometimes", "--co")
    assert done.returncode == 4
    assert "--beam-judge-check='sometimes': choose one of off, auto, on, all or a number of cases" in done.stderr


def test_the_judge_check_command_writes_a_record_the_report_prints(tmp_path, scripted, beam_data_dir):
    env = {**os.environ, "BEAM_DATA": str(beam_data_dir), "BEAM_BASE_URL": scripted.base_url}
    cmd = [sys.executable, "-m", "pytest_beam.cli", "judge-check", "--beam-judge-model=scripted", "--beam-cache=off",
           f"--results={tmp_path / 'results'}"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert scripted.request_count == 9
    assert ("judge check: 9 cases built from BEAM's reference answers, judged by scripted (profile default"
            in done.stdout)
    report = subprocess.run([sys.executable, "-m", "pytest_beam.cli", "report", f"--results={tmp_path / 'results'}"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert report.returncode == 0, report.stderr
    assert "judge check: 9 cases" in report.stdout and "no questions in this record" not in report.stdout

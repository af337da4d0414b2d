"""Issue 43: a record names every selected question, run or not, and the terminal, the record and
JUnit tell the same story. Here pytest's -x stops a run after its first failure, in one process
and under xdist: the questions it left are in the record's not_run with that reason, the record is
partial and says so, JUnit holds exactly the questions that ran, with the record's outcomes, and
the exit status is the same everywhere. (Ctrl-C, SIGTERM and kill -9 are in
test_interrupted_runs.py and test_worker_crash.py; a full disk in test_full_disk.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.e2e.test_full_disk import SILENT_SYSTEM
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.mark.parametrize("workers", [None, 2], ids=["one-process", "xdist"])
def test_questions_left_by_x_are_named_with_why_and_the_outputs_agree(tmp_path, beam_data_dir, workers):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    (tmp_path / "conftest.py").write_text(SILENT_SYSTEM)  # its answer never scores: every question fails
    with ScriptedModelServer(responder=ScriptedBeamModel()) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=full",
               "-k", "conv17 and not known_bad_rubric", "-x", f"--beam-data={beam_data_dir}",
               f"--beam-base-url={server.base_url}", "--beam-model=scripted", "--beam-cache=off",
               f"--beam-results={tmp_path / 'results'}", "--beam-snapshot=off", "--beam-pass-score=1",
               "--beam-max-calls=100000", "--beam-max-tokens=100000000", f"--junitxml={tmp_path / 'junit.xml'}"]
        if workers:
            cmd += ["-n", str(workers)]
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    out = proc.stdout + proc.stderr
    (path,) = (tmp_path / "results").glob("*/record.json")
    record = json.loads(path.read_text())
    ran = {q["id"]: q["outcome"] for q in record["questions"]}
    not_run = {q["id"]: q["reason"] for q in record["not_run"]}
    assert ran and not_run and not set(ran) & set(not_run), out[-3000:]
    assert len(ran) + len(not_run) == record["selected_questions"] == 19  # conv17's 20, less its known-bad one
    assert set(not_run.values()) == {"the run stopped: stopping after 1 failures"}, not_run
    assert record["partial"] is True
    assert record["partial_reason"] == "the run stopped: stopping after 1 failures", record["partial_reason"]
    junit = {}
    for case in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase"):
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        junit[case.get("name").split("[", 1)[1].rstrip("]")] = {"failure": "failed"}.get(kinds.pop(), "?") \
            if kinds else "passed"
    assert junit == ran, (junit, ran)
    assert proc.returncode == record["exit_status"] != 0, out[-3000:]
    assert f"{len(ran)} failed" in proc.stdout.strip().splitlines()[-1]
    assert f"not run: {len(not_run)} questions (the run stopped: stopping after 1 failures)" in proc.stdout

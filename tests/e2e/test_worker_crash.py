"""Issue 43 finding 4: after kill -9 of one worker under xdist, the terminal, the record and JUnit
told three stories. JUnit had 101 testcases (the crashed question twice: an error, then a passed
re-run), the terminal said "1 failed" and exited 1, the record listed the question as passed
with partial false, and JUnit's per-question tokens left out the killed attempt's paid calls that
the record's totals held.

Now the crash is a re-run ("R", "1 rerun"): one testcase, the re-run's result, with the killed
attempt's paid calls kept on it and flagged; the three agree on every outcome and the exit status,
and JUnit's per-question calls and tokens add up to the record's.

The system answers without a graph (so only the judge calls the model) and writes its worker's pid
where the test finds it; the scripted model holds every call after the first ones at a gate, the
test kills conv17's worker there, then opens the gate (the other worker's held call is dropped
and retried).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from tests.e2e.gated_runs import DropThenServe, held, let_go
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CONFTEST = '''
import os
from pathlib import Path
from pytest_beam.system import IngestReport, MemorySystem, SystemAnswer


class Silent(MemorySystem):
    name = "silent"

    def __init__(self, context):
        self.context = context

    def ingest(self, documents):
        Path("pids").mkdir(exist_ok=True)
        Path("pids", self.context.conversation_id).write_text(str(os.getpid()))
        return IngestReport(chunks=len(documents))

    def answer(self, question):
        return SystemAnswer(text="The chat never says.")


def pytest_beam_make_system(context):
    return Silent(context)
'''


def test_a_killed_worker_s_question_is_one_testcase_and_the_three_outputs_agree(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    model = DropThenServe(paid=50)
    with ScriptedModelServer(responder=model) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=full",
               "-k", "conv17 or conv4", "-n", "2", f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}",
               "--beam-model=scripted", "--beam-cache=off", f"--beam-results={tmp_path / 'results'}",
               "--beam-snapshot=off", "--beam-pass-score=0", "--beam-max-retries=1", "--beam-concurrency=1",
               "--beam-max-calls=100000", "--beam-max-tokens=100000000", f"--junitxml={tmp_path / 'junit.xml'}"]
        with held(subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   env=dict(os.environ), start_new_session=True), model) as proc:
            model.wait_for(lambda: model.waiting >= 2, "both workers at the gate")
            os.kill(int((tmp_path / "pids" / "17").read_text()), signal.SIGKILL)
            time.sleep(1)
            out = let_go(proc, model)
        sent = server.request_count
    assert "INTERNALERROR" not in out, out[-4000:]
    (path,) = (tmp_path / "results").glob("*/record.json")
    record = json.loads(path.read_text())
    outcomes = {q["id"]: q["outcome"] for q in record["questions"]}
    # JUnit: one testcase per question, with the record's outcome
    cases = {}
    for case in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase"):
        qid = case.get("name").split("[", 1)[1].rstrip("]")
        assert qid not in cases, f"{qid} is two testcases"
        cases[qid] = ({child.tag for child in case} & {"failure", "error", "skipped"},
                      {p.get("name"): p.get("value") for p in case.iter("property")})
    assert sorted(cases) == sorted(outcomes) and all(not kinds for kinds, _ in cases.values())
    # the exit status: the process's, the record's, and what the outcomes give (every question passed)
    assert proc.returncode == record["exit_status"] == 0, out[-4000:]
    # the terminal: the outcomes counted as the record counts them, and the crash as a re-run
    counts = re.search(r"=+ (.*) in [0-9.]+s", out.strip().splitlines()[-1]).group(1)
    expected = {o: sum(v == o for v in outcomes.values()) for o in set(outcomes.values())}
    assert counts == ", ".join(f"{n} {o}" for o, n in sorted(expected.items(), key=lambda kv: kv[0] != "passed")) \
        + ", 1 rerun", counts
    assert len(outcomes) == 40 and record["not_run"] == [] and record["partial"] is False, record["partial_reason"]
    # the killed attempt's paid calls: on its question, flagged, in JUnit as in the record
    (rerun,) = [q for q in record["questions"] if "rerun_after_crash" in q["flags"]]
    crashed = rerun["crashed_attempt_usage"]["judge"]
    assert crashed["abandoned"] == 1, crashed  # the call it was waiting on when it was killed
    props = cases[rerun["id"]][1]
    assert int(props["crashed_attempt_calls"]) == crashed["calls"] and "rerun_after_crash" in props["flags"]
    assert f"run again after its worker crashed: {rerun['id']}" in out
    # JUnit's per-question calls and tokens add up to the record's totals (every call is a judge call)
    judge = record["usage"]["judge"]
    assert sum(int(p["calls"]) for _, p in cases.values()) == judge["calls"]
    assert sum(int(p["prompt_tokens"]) for _, p in cases.values()) == judge["prompt_tokens"]
    assert judge["calls"] + judge["retries"] + judge["abandoned"] == sent

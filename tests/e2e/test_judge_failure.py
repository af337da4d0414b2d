"""Issue 32 item 5, the judge side: a judge that stays down after its retries errors the question
(never a silent 0), and what the run did before that is kept: the answer the agent gave (it was
dropped from the record, answer null, so `pytest-beam rejudge` could not score it) and every
request the endpoint got for the failed judge call (the record said calls 0, retries 0, errors N
while the endpoint had answered N x (retries + 1) requests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.scripted_beam import LITE_ANSWERS, ScriptedBeamModel
from tests.e2e.test_caps import beam
from tests.model_server import Reply, ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]


class JudgeDown(ScriptedBeamModel):
    def __call__(self, body):
        if "You are an expert evaluator" in json.dumps(body):
            return Reply.fail(503, "scripted: the judge is down")
        return super().__call__(body)


def _judge_requests(server) -> int:
    return sum("You are an expert evaluator" in json.dumps(r.body) for r in server.chat_requests)


def test_an_answer_whose_judge_failed_is_kept_metered_and_rejudged(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    with ScriptedModelServer(responder=JudgeDown()) as server:
        proc = beam(tmp_path, server, beam_data_dir, "--beam-max-retries=2", "--beam-snapshot=off")
        sent, judged = server.request_count, _judge_requests(server)
    assert proc.returncode == 1 and "2 errors" in proc.stdout, proc.stdout[-4000:]
    (path,) = (tmp_path / "results").glob("*/record.json")
    record = json.loads(path.read_text())
    questions = record["questions"]
    assert [q["outcome"] for q in questions] == ["error", "error"]
    assert all("503" in q["error"] for q in questions), [q["error"] for q in questions]
    assert [q["answer"] for q in questions] == [LITE_ANSWERS[q["question"]] for q in questions]
    assert all(q["score"] is None for q in questions)  # unscored, not a 0
    judge = record["usage"]["judge"]
    assert judged == 6 and (judge["calls"], judge["retries"], judge["errors"]) == (2, 4, 2), judge
    assert sum(u["calls"] + u["retries"] + u.get("abandoned", 0) for u in record["usage"].values()) == sent
    # the harness searched first: read, then answer
    assert [(q["usage"]["judge"]["errors"], q["usage"]["agent"]["calls"]) for q in questions] == [(1, 2), (1, 2)]
    assert "requests sent: " in proc.stdout and "2 calls failed for good" in proc.stdout

    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEAM_", "OPENAI_"))}
    with ScriptedModelServer(responder=ScriptedBeamModel()) as judge_up:
        again = subprocess.run(
            [sys.executable, "-m", "pytest_beam", "rejudge", record["run_id"], "--results", str(tmp_path / "results"),
             "--beam-base-url", judge_up.base_url, "--beam-judge-model", "scripted", "--beam-cache", "off",
             "--beam-data", str(beam_data_dir)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        rejudged = _judge_requests(judge_up)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    new = json.loads((tmp_path / "results" / (tmp_path / "results" / "latest").read_text().strip()
                      / "record.json").read_text())
    assert new["rejudged_from"] == record["run_id"]
    assert [(q["outcome"], q["score"]) for q in new["questions"]] == [("passed", 1.0), ("passed", 1.0)]
    assert rejudged == sum(len(q["items"]) for q in new["questions"]) == 3

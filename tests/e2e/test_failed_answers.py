"""An agent that gives no answer (step limit) is scored 0 with its flag, and never judged."""

from __future__ import annotations

import json

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.e2e.test_caps import beam
from tests.model_server import Reply, ScriptedModelServer, tool_call

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]


class SpeechlessAgent(ScriptedBeamModel):
    """Searches until the step limit, and has nothing to say when asked for its best answer."""

    def agent_step(self, body):
        step = sum(1 for m in body["messages"] if m.get("role") == "tool")
        return Reply.calls(tool_call("hybrid_search", {"query": f"more {step}"}, id=f"call_{step}"))

    def answer_for(self, body):
        return ""


def test_a_failed_answer_is_not_sent_to_the_judge(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    with ScriptedModelServer(responder=SpeechlessAgent()) as server:
        proc = beam(tmp_path, server, beam_data_dir, "--beam-agent-steps=2", "--beam-snapshot=off")
        judged = [r for r in server.chat_requests
                  if "You are an expert evaluator" in json.dumps(r.body) or "binary classifier" in json.dumps(r.body)]
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert "2 failed" in proc.stdout and "the agent gave no answer (agent_failure" in proc.stdout
    assert judged == []
    record = json.loads(next((tmp_path / "results").glob("*/record.json")).read_text())
    assert record["usage"].get("judge", {}).get("calls", 0) == 0  # the meter saw no judge call
    for q in record["questions"]:
        assert q["outcome"] == "failed" and q["score"] == 0.0 and "agent_failure" in q["flags"]

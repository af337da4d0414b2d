"""A known-bad-rubric question is xfail for its score only: an infrastructure fault stays an ERROR."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.model_server import Reply, ScriptedModelServer

pytestmark = [pytest.mark.e2e]


def test_a_dead_endpoint_is_an_error_for_known_bad_questions_too(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    # The endpoint answers the session's check, then drops every call: down mid-run
    server = ScriptedModelServer(responder=lambda request: Reply.disconnect()).start()
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=full",
           "-k", "conv17 and temporal_reasoning", f"--beam-data={beam_data_dir}",
           f"--beam-base-url={server.base_url}", "--beam-model=nobody-home",
           "--beam-neo4j=local", "--beam-cache=off", "--beam-max-retries=0", "--beam-timeout=5",
           f"--beam-results={tmp_path / 'results'}", "--beam-max-calls=100000", "--beam-max-tokens=100000000",
           "--beam-snapshot=off", "-rxE"]
    try:
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=dict(os.environ))
    finally:
        server.stop()
    assert "2 errors" in proc.stdout and "xfail" not in proc.stdout.split("short test summary")[-1], proc.stdout[-4000:]
    record = json.loads(next((tmp_path / "results").glob("*/record.json")).read_text())
    outcomes = {q["id"]: (q["outcome"], q["error"]) for q in record["questions"]}
    assert sorted(outcomes) == ["conv17:temporal_reasoning:0", "conv17:temporal_reasoning:1"]  # :1 is known bad
    for outcome, error in outcomes.values():
        assert outcome == "error" and error and "ModelEndpointError" in error, outcomes

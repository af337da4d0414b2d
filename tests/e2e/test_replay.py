"""The committed lite cassette replays offline: the same answers as the snapshots, the same scores.

No model and no network: every model response comes from fixtures/cassettes/lite-qwen.jsonl (the
README's first command on the embedded model, recorded by tests/live/record_lite.py), and the run
goes through a real local Neo4j, ingest, the agent and the judge as live. The cassette's header
gives the models, tool mode and steps: the replay names only the cassette (and a pass score of 0,
since the embedded model's answers are wrong and this test checks the replay, not the model).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.expected_records import check

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "fixtures" / "cassettes" / "lite-qwen.jsonl"
SCORES = REPO / "fixtures" / "cassettes" / "lite-qwen.scores.json"
EXPECTED = REPO / "fixtures" / "cassettes" / "lite-qwen.record.json"  # tests/e2e/expected_records.py
REPLAY = ["-m", "lite", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-record-mode=none",
          f"--beam-cassette={CASSETTE}", "--beam-neo4j=local", "--beam-snapshot=assert",
          "--beam-pass-score=0", "--beam-cache=off"]


def test_committed_cassette_replays_the_recorded_run(tmp_path, beam_data_dir):
    recorded = json.loads(SCORES.read_text())
    cmd = [sys.executable, "-m", "pytest", *REPLAY, f"--beam-data={beam_data_dir}", f"--beam-results={tmp_path}",
           f"--junitxml={tmp_path / 'replay.xml'}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "BEAM_BASE_URL": "", "OPENAI_BASE_URL": ""})
    artifacts = Path(__import__("os").environ.get("BEAM_ARTIFACTS", REPO / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "replay-lite-output.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout and "pytest-beam summary" in proc.stdout
    record = json.loads(next(tmp_path.glob("*/record.json")).read_text())
    got = {q["id"]: {"score": q["score"], "items": [i["score"] for i in q["items"]], "flags": q["flags"]}
           for q in record["questions"]}
    assert got == recorded["scores"]
    check(record, EXPECTED)  # the whole record, apart from what changes from run to run
    assert set(record["models"].values()) == {recorded["model"]}  # from the cassette's header
    assert record["usage"].get("agent", {}).get("calls", 0) == 0  # nothing went to a network
    # a replayed call reports no prompt it was sent: the context is not measured, never a 0
    assert {q["context_tokens"] for q in record["questions"]} == {None}
    assert "context tokens per question" not in proc.stdout
    # JUnit: the class is the ability; a replayed question shows its replayed calls and their tokens
    # beside zero live tokens (it showed prompt_tokens=0 and nothing else)
    import xml.etree.ElementTree as ET

    cases = list(ET.parse(tmp_path / "replay.xml").getroot().iter("testcase"))
    assert sorted(c.get("classname") for c in cases) == ["beam.information_extraction", "beam.multi_session_reasoning"]
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert int(props["prompt_tokens"]) == 0 and int(props["replayed_calls"]) == int(props["calls"]) > 0
        assert int(props["cached_tokens"]) > 0


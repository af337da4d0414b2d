"""Mem0 and Graphiti beside the built-in system in one lite run, every call of theirs through the relay (issue 29).

The whole plugin in a subprocess, a real local Neo4j (graphrag's and Graphiti's own, one per
conversation and system), the scripted model double extended to Mem0's and Graphiti's prompts
(tests/e2e/scripted_peers.py). Checks per-system items and the record's usage rows: every request
the model double received is one the meter counted, and what the relay received equals what its
rows metered; each outside system reports the message ids its memories came from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.scripted_peers import PeerAwareModel
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
SYSTEMS = ["graphrag", "mem0", "graphiti"]
IDS = ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]


def calls(row: dict) -> int:
    return row.get("calls", 0) + row.get("cached_calls", 0) + row.get("replayed_calls", 0) + row.get("errors", 0)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_mem0_and_graphiti_beside_graphrag_metered_through_the_relay(tmp_path, beam_data_dir, workers):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    model = PeerAwareModel()
    with ScriptedModelServer(responder=model) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite", "-v",
               f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
               "--beam-neo4j=local", "--beam-cache=off", f"--beam-results={tmp_path / 'results'}",
               f"--beam-system={','.join(SYSTEMS)}", "--beam-max-calls=400", "--beam-max-tokens=5000000",
               "--snapshot-update", *workers]  # under xdist each worker serves its own relay
        run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=dict(os.environ))
        received = server.request_count
        chat_received = len(server.chat_requests)
    out = run.stdout
    assert run.returncode == 0, out[-5000:] + run.stderr[-3000:]
    assert "6 passed" in out
    for system in SYSTEMS:
        for qid in IDS:
            assert f"PASSED beam::test_question[{system}-{qid}]" in out or f"beam::test_question[{system}-{qid}] PASSED" in out
    assert model.unknown == [] and model.served["mem0"] == 2 and model.served["graphiti"] >= 6

    [record_file] = (tmp_path / "results").glob("*/record.json")
    record = json.loads(record_file.read_text())
    by_system = record["usage_by_system"]
    assert list(by_system) == SYSTEMS
    # the libraries' own calls are metered under their names; they answer and are judged as any system
    assert calls(by_system["mem0"]["mem0 extraction"]) == 2
    assert calls(by_system["graphiti"]["graphiti extraction"]) == model.served["graphiti"]
    for system in ("mem0", "graphiti"):
        assert calls(by_system[system]["agent"]) == 2 and calls(by_system[system]["judge"]) > 0
        assert set(by_system[system]) == {f"{system} extraction", "agent", "judge"}
    # the relay received exactly what its rows metered (no endpoint embedder: embeddings are local)
    relay = record["relay"]
    assert relay["mem0"]["chat"] == calls(by_system["mem0"]["mem0 extraction"])
    assert relay["graphiti"]["chat"] == calls(by_system["graphiti"]["graphiti extraction"])
    assert relay["mem0"]["embeddings"] > 0 and relay["graphiti"]["embeddings"] > 0
    assert relay["mem0"]["errors"] == relay["graphiti"]["errors"] == 0
    # every request the model double received is a metered call of the run, and no more
    assert received == chat_received == sum(calls(row) for row in record["usage"].values())
    assert "cost by system and meter row" in out and "mem0 extraction" in out and "graphiti extraction" in out
    assert "2 chat requests received, 2 metered" in out

    # evidence recall: the memories name the BEAM messages they came from
    recall = {(q["system"], q["id"]): q["evidence_recall"] for q in record["questions"]}
    assert recall[("mem0", IDS[0])] == 1.0 and recall[("graphiti", IDS[0])] == 1.0
    assert recall[("mem0", IDS[1])] == 1.0 and recall[("graphiti", IDS[1])] == 0.5  # 157 is the assistant's reply

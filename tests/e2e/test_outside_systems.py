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

from tests.e2e.scripted_beam import _schema_name, _text
from tests.e2e.scripted_peers import PeerAwareModel
from tests.model_server import Reply, ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
SYSTEMS = ["graphrag", "mem0", "graphiti"]
IDS = ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]


def calls(row: dict) -> int:
    return row.get("calls", 0) + row.get("cached_calls", 0) + row.get("replayed_calls", 0) + row.get("errors", 0)


def test_mem0_and_graphiti_beside_graphrag_metered_through_the_relay(tmp_path, beam_data_dir):
    """Under xdist, where each worker serves its own relay. The same systems in one process go through
    the relay in test_replay_peers.py, whose record (the relay's counts and every meter row) is
    pinned; this run was also made in one process until issue 40 cut the suite's repeats."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    workers = ["-n", "2"]
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
            assert (f"PASSED beam::test_question[{system}-{qid}]" in out
                    or f"beam::test_question[{system}-{qid}] PASSED" in out)
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


class LoopingEdges(PeerAwareModel):
    """Graphiti's edge extraction for one message runs to the completion cap, as the 1.5B embedded
    model did on lite message 156 (the same five facts over and over): the reply is cut JSON."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.looped = 0

    def __call__(self, body: dict) -> object:
        text = _text(body)
        if _schema_name(body) == "ExtractedEdges" and self.marker in text.split("<CURRENT_MESSAGE>")[-1]:
            self.looped += 1
            self._count("graphiti")
            fact = '{"source_entity_name": "user", "target_entity_name": "Emma", "relation_type": "HAS", "fact": "x"}, '
            return Reply.say('{"edges": [' + fact * 40, finish_reason="length")
        return super().__call__(body)


def test_graphiti_keeps_ingesting_when_the_model_s_reply_for_one_message_is_unusable(tmp_path, beam_data_dir):
    """One message whose facts the model never finishes writing is one empty extraction, named in the
    record with its cause; the other messages are in the graph and the questions are answered."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    model = LoopingEdges("three kids")
    with ScriptedModelServer(responder=model) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
               f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
               "--beam-neo4j=local", "--beam-cache=off", f"--beam-results={tmp_path / 'results'}",
               "--beam-system=graphiti", "--beam-max-calls=400", "--beam-max-tokens=5000000", "--beam-pass-score=0",
               "--beam-snapshot=off"]
        run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=dict(os.environ))
    out = run.stdout
    assert run.returncode == 0, out[-5000:] + run.stderr[-3000:]
    assert "2 passed" in out
    assert model.looped == 4  # Graphiti's own four tries, each metered, none retried by the harness
    [record_file] = (tmp_path / "results").glob("*/record.json")
    record = json.loads(record_file.read_text())
    [ingest] = record["graph"].values()
    assert ingest["chunks"] == 3 and ingest["empty_extractions"] == 1
    [lost] = [n for n in ingest["notes"] if "left out" in n]
    assert lost.startswith("graphiti: message 18 left out"), lost  # "I've got three kids, ..."
    assert "JSONDecodeError" in lost and "4 tries" in lost, lost
    assert ingest["notes"][0].startswith("graphiti: 3 messages as 2 episodes")
    assert ingest["relations_by_type"]["RELATES_TO"] > 0  # the other messages' facts are in the graph
    assert record["relay"]["graphiti"]["chat"] == calls(record["usage_by_system"]["graphiti"]["graphiti extraction"])

"""A baseline runs through today's harness unchanged, as a user's conftest would plug it in.

The lite set in a pytest subprocess with `pytest_beam_make_system` returning a registry system:
no Neo4j, the scripted BEAM model (tests/e2e/scripted_beam.py) as answerer and judge. It checks
that what the system sent is what the record says it retrieved, and that the tokens it counted
reach the trace.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import ScriptedModelServer
from tests.systems.conftest import HEADER

CONFTEST = """
from pytest_beam.systems import make_system


def pytest_beam_make_system(context):
    return make_system({name!r}, context)
"""


class BaselineAwareModel(ScriptedBeamModel):
    """The scripted BEAM model; a baseline's question is its prompt's user message."""

    def question_of(self, body):
        found = super().question_of(body)
        users = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
        return found or (users[-1].strip() if users else "")


@pytest.mark.parametrize("name", ["bm25", "long-context"])
def test_a_baseline_answers_the_lite_set_through_the_harness(name, tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    (tmp_path / "conftest.py").write_text(CONFTEST.format(name=name))
    with ScriptedModelServer(responder=BaselineAwareModel()) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
               f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
               "--beam-neo4j=bolt://127.0.0.1:1",  # nothing listens there: any use of Neo4j would fail
               "--beam-cache=off", f"--beam-results={tmp_path / 'results'}"]
        run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ))
        answering = [r for r in server.chat_requests if r.messages and r.messages[0]["role"] == "system"
                     and "Messages from the conversation:" in r.messages[0]["content"]]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "2 passed" in run.stdout

    [record_file] = (tmp_path / "results").glob("*/record.json")
    record = json.loads(record_file.read_text())
    by_id = {q["id"]: q for q in record["questions"]}
    assert sorted(by_id) == ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]
    sent = {}
    for request in answering:
        shown = [int(m.group(1)) for m in HEADER.finditer(request.messages[0]["content"])]
        sent[request.messages[1]["content"]] = shown
    assert len(answering) == 2
    # the lite slices' user turns end in plan markers ("->-> 3,1"); the system saw the chat without them
    assert all("->->" not in json.dumps(r.body) for r in server.chat_requests)
    assert record["settings"]["keep_markers"] is False
    for q in by_id.values():
        assert q["retrieved_message_ids"] == sorted(sent[q["question"]])
        assert q["evidence_recall"] == 1.0 and q["score"] == 1.0  # the slices hold exactly the sources

    with gzip.open(record_file.parent / "trace.jsonl.gz", "rt") as f:
        lines = [json.loads(line) for line in f]
    notes = [s for line in lines if line.get("kind") == "agent_trace" for s in line["steps"] if s["type"] == "note"]
    assert len(notes) == 2 and all(n["system"] == name and n["context_tokens"] > 0 for n in notes)

"""The committed peers' cassette replays offline: graphrag, mem0 and graphiti on the lite set.

Every model response comes from fixtures/cassettes/lite-peers-qwen.jsonl (recorded on the embedded
model by tests/live/record_peers.py), the built-in system's calls and those the outside systems'
libraries made through the model relay alike; no model and no network. The run goes through a
real local Neo4j (graphrag's graph and Graphiti's), Mem0's local vector store and the judge as
live, and must give each system's recorded answers and scores again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
pytest.importorskip("mem0", reason="the mem0 extra (pip install -e '.[mem0]')")
pytest.importorskip("graphiti_core", reason="the graphiti extra (pip install -e '.[graphiti]')")

from tests.e2e.expected_records import check  # noqa: E402
from tests.live.record_peers import CASSETTE, PEERS, SCORES, recorded_scores  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXPECTED = REPO / "fixtures" / "cassettes" / "lite-peers-qwen.record.json"  # tests/e2e/expected_records.py


def calls(row: dict) -> int:
    return sum(row.get(k, 0) for k in ("calls", "cached_calls", "replayed_calls", "errors"))


def test_committed_peers_cassette_replays_the_recorded_run(tmp_path, beam_data_dir):
    recorded = json.loads(SCORES.read_text())
    cmd = [sys.executable, "-m", "pytest", "-m", "lite", "-p", "no:randomly", "-p", "no:cacheprovider",
           "--beam-record-mode=none", f"--beam-cassette={CASSETTE}", "--beam-neo4j=local", "--beam-cache=off",
           "--beam-pass-score=0", *PEERS, f"--beam-data={beam_data_dir}", f"--beam-results={tmp_path}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEAM_BASE_URL", "OPENAI_", "BEAM_MODEL"))}
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200, env=env)
    artifacts = Path(os.environ.get("BEAM_ARTIFACTS", REPO / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "replay-peers-output.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert "6 passed" in proc.stdout and "pytest-beam summary" in proc.stdout

    record = json.loads(next(tmp_path.glob("*/record.json")).read_text())
    assert recorded_scores(record) == recorded["systems"]
    check(record, EXPECTED)  # the whole record, apart from what changes from run to run
    assert set(record["models"].values()) == {recorded["model"]}  # from the cassette's header
    by_system = record["usage_by_system"]
    assert list(by_system) == ["graphrag", "mem0", "graphiti"]
    for system, rows in by_system.items():
        for role, row in rows.items():  # every call served from the cassette: nothing went to a network
            assert row.get("calls", 0) == 0 and row.get("errors", 0) == 0, (system, role, row)
            assert row.get("replayed_calls", 0) > 0, (system, role, row)
    # the libraries' own calls went through the relay, each one a replayed row of its system
    relay = record["relay"]
    for system in ("mem0", "graphiti"):
        assert relay[system]["chat"] == calls(by_system[system][f"{system} extraction"]) > 0
        assert relay[system]["errors"] == 0 and relay[system]["embeddings"] > 0

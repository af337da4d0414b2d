"""The committed leaders' cassette replays offline: graphrag, Hindsight, Cognee, LightRAG, neo4j-graphrag and
LangMem on the lite set (issue 44).

Every model response comes from fixtures/cassettes/lite-leaders-qwen.jsonl (recorded on the embedded
model by tests/live/record_leaders.py): the built-in system's calls, the judge's and those each
library made through the model relay, Hindsight's and Cognee's from their own processes. No model,
and no connection off the machine from any process (tests/e2e/no_network). The run goes through a
real local Neo4j (graphrag's and neo4j-graphrag's, with APOC), pg0's PostgreSQL (Hindsight), Cognee's
and LightRAG's files and LangMem's store, and must give each system's recorded answers, item scores
and evidence recall again, with the same calls and tokens per meter row and the same requests at the
relay.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_beam.systems import missing_extra
from tests.e2e.expected_records import TIMED_RELAY_COUNTS, check
from tests.e2e.test_published_leaders import LEADERS, no_network_env
from tests.live.record_leaders import CASSETTE, SCORES, SYSTEMS, recorded_usage
from tests.live.record_leaders import LEADERS as FLAGS
from tests.live.record_peers import recorded_scores

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
REPO = Path(__file__).resolve().parents[2]
EXPECTED = REPO / "fixtures" / "cassettes" / "lite-leaders-qwen.record.json"  # tests/e2e/expected_records.py


def test_committed_leaders_cassette_replays_the_recorded_run(tmp_path, beam_data_dir):
    missing = [line for name in LEADERS if (line := missing_extra(name))]
    if missing:
        pytest.skip("; ".join(missing))
    recorded = json.loads(SCORES.read_text())
    cmd = [sys.executable, "-m", "pytest", "-m", "lite", "-p", "no:randomly", "-p", "no:cacheprovider",
           "--beam-record-mode=none", f"--beam-cassette={CASSETTE}", "--beam-cache=off", "--beam-pass-score=0",
           *FLAGS, f"--beam-data={beam_data_dir}", f"--beam-results={tmp_path}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1500, env=no_network_env(tmp_path))
    artifacts = Path(os.environ.get("BEAM_ARTIFACTS", REPO / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "replay-leaders-output.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "12 passed" in proc.stdout and "pytest-beam summary" in proc.stdout and "leaderboard" in proc.stdout
    assert not (tmp_path / "network.log").exists(), (tmp_path / "network.log").read_text()

    record = json.loads(next(tmp_path.glob("*/record.json")).read_text())
    assert recorded_scores(record) == recorded["systems"]
    check(record, EXPECTED)  # the whole record, apart from what changes from run to run
    assert set(record["models"].values()) == {recorded["model"]}  # from the cassette's header
    by_system = record["usage_by_system"]
    assert list(by_system) == SYSTEMS
    for system, rows in by_system.items():
        for role, row in rows.items():  # every call served from the cassette: nothing went to a network
            assert row.get("calls", 0) == 0 and row.get("errors", 0) == 0, (system, role, row)
            assert row.get("replayed_calls", 0) > 0, (system, role, row)
    assert recorded_usage(record) == recorded["usage"]  # the same calls and tokens, row by row
    # the libraries sent the relay what they sent when recorded (Hindsight's embedding requests apart:
    # its coalescing embedder batches by timing, expected_records.TIMED_RELAY_COUNTS)
    timed = {(system, count) for system, count in TIMED_RELAY_COUNTS}
    assert {(s, k): v for s, counts in record["relay"].items() for k, v in counts.items() if (s, k) not in timed} == \
        {(s, k): v for s, counts in recorded["relay"].items() for k, v in counts.items() if (s, k) not in timed}
    assert all(record["relay"][s][k] > 0 for s, k in timed)  # it embedded, in however many requests
    for system in LEADERS:
        assert record["relay"][system]["chat"] == recorded["usage"][system][f"{system} extraction"]["calls"] > 0
    ranked = [row["system"] for row in record["leaderboard"]]
    assert sorted(ranked) == sorted(SYSTEMS) and [row["rank"] for row in record["leaderboard"]] == [1, 2, 3, 4, 5, 6]
    for row in record["leaderboard"]:  # the cost beside each score is what the recording spent, replayed or not
        own = {r: u for r, u in recorded["usage"][row["system"]].items() if r != "judge"}
        # calls are live ones, as everywhere (none in a replay); the recording's calls are the replayed ones
        assert (row["calls"], row["replayed_calls"]) == (0, sum(u["calls"] for u in own.values()))
        assert row["tokens"] == sum(u["tokens"] for u in own.values()) > 0

"""One run over three machines (issue 41 points 3 and 4), end to end: the full set as three shards in
three processes, each with its own results folder, merged by `pytest-beam merge`, equals one unsharded
run question by question and in every aggregate, its intervals over all five conversations included.

The bm25 baseline answers (its ingest makes no model call and needs no Neo4j, so five conversations
cost seconds) and a scripted judge gives each rubric item a score of its own (a hash of the item and
the answer), so the means and intervals compared are not all zero. The scripted model is a test
double: the scores say nothing of bm25.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e]


class SpreadJudge(ScriptedBeamModel):
    """Scores 0, 0.5 or 1 by a hash of the judge's prompt: the same prompt, the same score."""

    def judge(self, prompt: str) -> dict:
        score = (0.0, 0.5, 1.0)[int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 3]
        return {"score": score, "reason": "scripted"}


def beam(project: Path, server: ScriptedModelServer, beam_data_dir: Path, results: Path, *args: str):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=full",
           "--beam-system=bm25", f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}",
           "--beam-model=scripted", "--beam-cache=off", "--beam-snapshot=off", "--beam-pass-score=0",
           "--beam-max-calls=100000", "--beam-max-tokens=100000000", f"--beam-results={results}", *args]
    return subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ))


def finished(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-4000:]
    return out


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_beam.cli", *args], capture_output=True, text=True,
                          timeout=300)


def record_dir(results: Path) -> Path:
    (path,) = results.glob("*/record.json")
    return path.parent


def questions(record: dict) -> list[tuple]:
    return [(q["id"], q["answer"], q["score"], [i["score"] for i in q["items"]], q["flags"], q["outcome"],
             q["evidence_recall"], {r: (u["calls"], u["prompt_tokens"], u["completion_tokens"])
                                    for r, u in q["usage"].items()}) for q in record["questions"]]


def calls(record: dict) -> dict[str, tuple[int, int, int]]:
    return {r: (u["calls"], u["prompt_tokens"], u["completion_tokens"]) for r, u in record["usage"].items()}


def test_three_shards_merged_equal_one_unsharded_run(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    with ScriptedModelServer(responder=SpreadJudge()) as server:
        shards = [beam(tmp_path, server, beam_data_dir, tmp_path / f"shard{k}", f"--beam-shard={k}/3")
                  for k in (1, 2, 3)]  # three processes at once, each its own results folder
        outs = [finished(proc) for proc in shards]
        finished(beam(tmp_path, server, beam_data_dir, tmp_path / "one"))  # the same run, unsharded
    sharded = [json.loads((record_dir(tmp_path / f"shard{k}") / "record.json").read_text()) for k in (1, 2, 3)]
    assignment = sharded[0]["shard"]["assignment"]
    assert sorted(c for shard in assignment for c in shard) == ["1", "13", "17", "4", "6"]  # each in one shard
    for k, (record, out) in enumerate(zip(sharded, outs), start=1):
        assert (record["shard"]["index"], record["shard"]["count"]) == (k, 3)
        assert record["shard"]["conversations"] == assignment[k - 1]
        assert len(record["shard"]["run_questions"]) == 100
        assert {q["conversation_id"] for q in record["questions"]} == set(assignment[k - 1])
        assert f"{100 - 20 * len(assignment[k - 1])} deselected" in out  # the other shards' items
    merged_out = tmp_path / "merged"
    merge = cli("merge", *(str(record_dir(tmp_path / f"shard{k}")) for k in (3, 1, 2)), "--out", str(merged_out),
                "--html")
    assert merge.returncode == 0, merge.stdout[-3000:] + merge.stderr
    merged = json.loads((record_dir(merged_out) / "record.json").read_text())
    one = json.loads((record_dir(tmp_path / "one") / "record.json").read_text())

    assert questions(merged) == questions(one)  # question by question, in the run's order
    assert merged["abilities"] == one["abilities"] and merged["overall"] == one["overall"]  # intervals too
    assert one["overall"]["interval"]["clusters"] == 5 and 0 < one["overall"]["mean"] < 1
    assert calls(merged) == calls(one)
    assert sorted(merged["graph"]) == sorted(one["graph"]) and merged["shard"] is None
    assert merged["merged_from"] == [r["run_id"] for r in sorted(sharded, key=lambda r: (r["started"], r["run_id"]))]
    assert merged["partial"] is False and merged["exit_status"] == 0
    assert (record_dir(merged_out) / "report.html").is_file()
    assert "pytest-beam summary" not in merge.stdout and "record: " in merge.stdout

    # report reads the merged record as it reads a run's: the same tables as the unsharded run's
    rows = [cli("report", str(record_dir(d))).stdout for d in (merged_out, tmp_path / "one")]
    table = [line.split() for text in rows for line in text.splitlines() if line.startswith("overall ")]
    assert len(table) == 2 and table[0] == table[1], rows

    # an absent shard: its questions are named, and the merged record says it is partial
    absent = cli("merge", str(record_dir(tmp_path / "shard1")), str(record_dir(tmp_path / "shard3")),
                 "--out", str(tmp_path / "partial"))
    assert absent.returncode == 1, absent.stdout[-2000:] + absent.stderr
    missing = 20 * len(assignment[1])
    assert f"merge: {missing} of the run's questions are in no record: " in absent.stdout
    assert f"conv{assignment[1][0]}:abstention:0" in absent.stdout
    partial = json.loads((record_dir(tmp_path / "partial") / "record.json").read_text())
    assert partial["partial"] is True and partial["partial_reason"].startswith("shard 2/3 absent")

"""The live stage: the lite set end to end against a real model (SmolLM2-135M under llama.cpp).

SmolLM2 answers and judges mostly wrongly; this proves the pipeline survives a live model's
real outputs — every question ends with a score and its flags, nothing errors, the record shows
real usage — not that the scores mean anything. The run records a cassette as it goes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.llama_server import LlamaServer, unavailable_reason

pytestmark = [pytest.mark.live_model, pytest.mark.e2e, pytest.mark.neo4j]
REPO = Path(__file__).resolve().parents[2]
LIVE_FLAGS = ["--beam-tool-mode=json", "--beam-agent-steps=4", "--beam-timeout=900", "--beam-agent-timeout=1800",
              "--beam-concurrency=1", "--beam-snapshot=off", "--beam-pass-score=0", "--beam-cache=off"]


def live_lite_command(server: LlamaServer, beam_data: Path, out: Path, cassette: Path) -> list[str]:
    return [sys.executable, "-m", "pytest", "-m", "lite", "-p", "no:randomly", "-p", "no:cacheprovider",
            f"--beam-data={beam_data}", f"--beam-base-url={server.base_url}", f"--beam-model={server.model}",
            "--beam-neo4j=local", f"--beam-results={out / 'results'}", "--beam-record-mode=all",
            f"--beam-cassette={cassette}", f"--junitxml={out / 'live.xml'}", *LIVE_FLAGS]


def test_live_lite_run_survives_a_real_model(tmp_path, beam_data_dir):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    cassette = tmp_path / "lite-smollm2.jsonl"
    with LlamaServer() as server:
        proc = subprocess.run(live_lite_command(server, beam_data_dir, tmp_path, cassette), cwd=project,
                              capture_output=True, text=True, timeout=3000)
    artifacts = Path(os.environ.get("BEAM_ARTIFACTS", REPO / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "live-lite-output.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]

    record = json.loads(next((tmp_path / "results").glob("*/record.json")).read_text())
    assert sorted(q["id"] for q in record["questions"]) == ["conv17:information_extraction:0",
                                                            "conv17:multi_session_reasoning:0"]
    for q in record["questions"]:
        assert q["outcome"] == "passed" and q["score"] is not None and 0.0 <= q["score"] <= 1.0
        assert isinstance(q["flags"], list) and q["items"], q
    for role in ("extraction", "agent", "judge"):
        usage = record["usage"][role]
        assert usage["calls"] > 0 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0, role
    assert record["models"]["agent"] == server.model

    lines = cassette.read_text().splitlines()
    assert len(lines) >= record["usage"]["extraction"]["calls"] + record["usage"]["judge"]["calls"]
    raw = cassette.read_text()
    assert "[message 18," not in raw and "Which days did I say" not in raw  # no request bodies

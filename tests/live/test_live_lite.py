"""The live stage: the README's first command — the lite set on the embedded model, no endpoint given.

Qwen2.5-Coder-1.5B (Q4_K_M) under llama.cpp, started by the plugin itself because no endpoint is
set: this proves the whole pipeline survives a real model's outputs — every question ends with a
score (passed or failed, never an error or a skip), the record shows real usage by every role
and names the embedded model — not that the scores are worth publishing. The run records a
cassette as it goes (`tests/live/record_lite.py` writes the committed one the same way). About
15 minutes on an idle 2-core machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_beam.llm import embedded

_REASON = embedded.unavailable_reason()
pytestmark = [pytest.mark.live_model, pytest.mark.e2e, pytest.mark.neo4j,
              pytest.mark.skipif(_REASON is not None, reason=f"embedded model not installed: {_REASON}")]
REPO = Path(__file__).resolve().parents[2]
IDS = ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]


def readme_command(out: Path, cassette: Path, *extra: str) -> list[str]:
    """`pytest -m lite` as the README gives it (BEAM_DATA in the environment, no endpoint), plus
    where this run keeps its record, its cassette and its JUnit XML."""
    return [sys.executable, "-m", "pytest", "-m", "lite", "-p", "no:randomly", "-p", "no:cacheprovider",
            f"--beam-results={out / 'results'}", "--beam-record-mode=all", f"--beam-cassette={cassette}",
            "--beam-cache=off", f"--junitxml={out / 'live.xml'}", *extra]


def embedded_env(beam_data: Path) -> dict[str, str]:
    """No endpoint of any kind, so the plugin starts the embedded model."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BEAM_BASE_URL", "BEAM_MODEL", "OPENAI_", "BEAM_API_KEY"))}
    return {**env, "BEAM_DATA": str(beam_data)}


def test_the_readme_first_command_scores_every_lite_question_on_the_embedded_model(tmp_path, beam_data_dir):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    cassette = tmp_path / "lite-qwen.jsonl"
    proc = subprocess.run(readme_command(tmp_path, cassette, "--beam-snapshot=off"), cwd=project,
                          capture_output=True, text=True, timeout=5400, env=embedded_env(beam_data_dir))
    artifacts = Path(os.environ.get("BEAM_ARTIFACTS", REPO / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "live-lite-output.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode in (0, 1), proc.stdout[-5000:] + proc.stderr[-2000:]  # 1: a wrong answer fails
    assert proc.stdout.count("embedded model: starting llama.cpp's server") == 1

    record = json.loads(next((tmp_path / "results").glob("*/record.json")).read_text())
    assert sorted(q["id"] for q in record["questions"]) == IDS
    for q in record["questions"]:
        assert q["outcome"] in ("passed", "failed") and q["score"] is not None and 0.0 <= q["score"] <= 1.0, q
        assert isinstance(q["flags"], list) and q["items"], q
        assert "parse_error" not in q["flags"], q  # verdicts asked through BEAM's JSON schema parse
        assert {i.get("reply_format") for i in q["items"]} == {"json_schema"}, q["items"]
    for role in ("extraction", "agent", "judge"):
        usage = record["usage"][role]
        assert usage["calls"] > 0 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0, role
    assert set(record["models"].values()) == {embedded.MODEL_NAME}

    from pytest_beam.llm.cassette import read_settings

    header = read_settings(cassette)  # what a replay needs no flag for
    assert (header["model"], header["tool_mode"]) == (embedded.MODEL_NAME, "json"), header
    raw = cassette.read_text()
    assert len(raw.splitlines()) >= record["usage"]["extraction"]["calls"] + record["usage"]["judge"]["calls"]
    assert "[message 18," not in raw and "Which days did I say" not in raw  # no request bodies

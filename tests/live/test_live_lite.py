"""The live stage: the README's first command — the lite set on the embedded model, no endpoint given.

Qwen2.5-Coder-1.5B (Q4_K_M) under llama.cpp's server, started by the plugin itself because no
endpoint is set: this proves the whole pipeline survives a real model's outputs — every question
ends with a score (passed or failed, never an error or a skip), the record shows real usage by
every role and names the embedded model, the summary and the judge check are printed — not that
the scores are worth publishing.

The command runs once. In CI, .ci/run runs it in a fresh clone (the newcomer's path: empty HOME,
no compiler reachable) and keeps what it wrote in the folder ``BEAM_FIRST_COMMAND`` names; this
test reads that folder and runs nothing. Elsewhere (``tox -e live``, a developer's machine) it runs
the command itself, about 8 minutes on an idle 2-core machine, into a folder of the same layout:

    status          the command's exit status
    output.txt      what it printed (stdout and stderr)
    results/        its --beam-results folder (``<run>/record.json``)
    lite-qwen.jsonl the cassette it recorded (BEAM_RECORD_MODE=all)
    live.xml        its JUnit XML
"""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_beam.llm import embedded
from pytest_beam.services import NEO4J_VERSION
from tests.live.first_command import embedded_env, readme_command

_REASON = embedded.unavailable_reason()
REPO = Path(__file__).resolve().parents[2]
IDS = ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]
FIRST_COMMAND = "BEAM_FIRST_COMMAND"  # the folder .ci/run kept the README's first command's outputs in
pytestmark = [pytest.mark.live_model, pytest.mark.e2e, pytest.mark.neo4j]


def run_first_command(folder: Path, beam_data: Path) -> None:
    """The command in a project that holds nothing but the lite mode, on a fresh cache folder (so the
    first-time steps run, as on a newcomer's machine)."""
    project = folder / "project"
    project.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    proc = subprocess.run(readme_command(folder, folder / "lite-qwen.jsonl"), cwd=project, capture_output=True,
                          text=True, timeout=5400, env=embedded_env(beam_data, BEAM_CACHE_DIR=str(folder / "cache")))
    (folder / "output.txt").write_text(proc.stdout + proc.stderr)
    (folder / "status").write_text(str(proc.returncode))


@pytest.fixture(scope="module")
def first_command(tmp_path_factory: pytest.TempPathFactory, beam_data_dir: Path) -> Path:
    kept = os.environ.get(FIRST_COMMAND, "").strip()
    if kept:
        return Path(kept)
    if _REASON is not None:
        pytest.skip(f"embedded model not installed: {_REASON}")
    folder = tmp_path_factory.mktemp("first-command")
    run_first_command(folder, beam_data_dir)
    artifacts = Path(os.environ.get("BEAM_ARTIFACTS", REPO / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "live-lite-output.txt").write_text((folder / "output.txt").read_text())
    return folder


def test_the_readme_first_command_scores_every_lite_question_on_the_embedded_model(first_command: Path):
    status = int((first_command / "status").read_text())
    output = (first_command / "output.txt").read_text(errors="replace")
    assert status in (0, 1), output[-6000:]  # 1: a wrong answer fails its test, not the command
    assert output.count("embedded model: starting llama.cpp's server") == 1
    assert "pytest-beam summary" in output and "judge check:" in output
    # the first-time steps, each said once (tests/e2e/test_first_steps.py: under xdist, each before its step)
    assert output.count("embedded model: assembling Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, once)") == 1
    assert output.count(f"Neo4j: resolving the Neo4j {NEO4J_VERSION} jars with Maven into ~/.m2 (about 130 MB") == 1
    assert output.count("embedder: building the int8 MiniLM model once into") == 1

    records = sorted((first_command / "results").glob("*/record.json"))
    assert len(records) == 1, records
    assert [p for p in (first_command / "results").iterdir() if p.is_dir()] == [records[0].parent]  # none empty
    record = json.loads(records[0].read_text())
    assert sorted(q["id"] for q in record["questions"]) == IDS
    for q in record["questions"]:
        assert q["outcome"] in ("passed", "failed") and q["score"] is not None and 0.0 <= q["score"] <= 1.0, q
        assert isinstance(q["flags"], list) and q["items"], q
        assert "parse_error" not in q["flags"], q  # verdicts asked through BEAM's JSON schema parse
        assert {i.get("reply_format") for i in q["items"]} == {"json_schema"}, q["items"]
    failed = sum(q["outcome"] == "failed" for q in record["questions"])
    assert (status == 1) == (failed > 0), (status, failed)  # the exit status is the record's verdict
    assert record["exit_status"] == status
    for role in ("extraction", "agent", "judge"):
        usage = record["usage"][role]
        assert usage["calls"] > 0 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0, role
    assert set(record["models"].values()) == {embedded.MODEL_NAME}
    check = record["judge_check"]  # the embedded model judges: its calibration is printed beside the scores
    assert check is not None and len(check["verdicts"]) >= 6, check
    # right and wrong answers (references, another question's reference, 'I don't know') all judged
    # through BEAM's verdict schema, every reply parsed
    assert not [v for v in check["verdicts"] if "parse_error" in v["flags"]], check["verdicts"]

    cases = {c.get("name"): c for c in ET.parse(first_command / "live.xml").getroot().iter("testcase")}
    assert sorted(cases) == sorted(f"test_question[{i}]" for i in IDS)
    for q in record["questions"]:
        props = {p.get("name"): p.get("value") for p in cases[f"test_question[{q['id']}]"].iter("property")}
        assert float(props["score"]) == pytest.approx(q["score"]), (q["id"], props)

    from pytest_beam.llm.cassette import read_settings

    cassette = first_command / "lite-qwen.jsonl"
    header = read_settings(cassette)  # what a replay needs no flag for
    assert (header["model"], header["tool_mode"]) == (embedded.MODEL_NAME, "json"), header
    raw = cassette.read_text()
    assert len(raw.splitlines()) >= record["usage"]["extraction"]["calls"] + record["usage"]["judge"]["calls"]
    # no request bodies: each entry is a response keyed by its request's fingerprint (a reply may quote
    # the question, as the agent's search action does, so the question's words prove nothing)
    entries = [json.loads(line) for line in raw.splitlines()[1:]]
    assert all(set(e) <= {"body", "body_b64", "fp", "i", "kind", "model", "role"} for e in entries), entries[0].keys()
    assert "[message 18," not in raw  # a chunk's text as the extraction request held it

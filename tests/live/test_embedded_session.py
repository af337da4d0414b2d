"""A run with no endpoint starts the embedded model once, on the controller, and stops it.

A small memory system from a conftest (the `pytest_beam_make_system` hook) asks the model one
short question per conversation through the harness's client and writes down which endpoint
and settings it was given; no Neo4j is needed. Real llama-server, real model: each test pays
one model start (about half a minute on a loaded 2-core machine).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pytest_beam.llm import embedded

_REASON = embedded.unavailable_reason()
pytestmark = [pytest.mark.live_model,
              pytest.mark.skipif(_REASON is not None, reason=f"embedded model not installed: {_REASON}")]

CONFTEST = '''
import json, os, time
import pytest
from pytest_beam.system import IngestReport, MemorySystem, SystemAnswer

CONFIGS = []


def pytest_configure(config):
    CONFIGS.append(config)


class Probe(MemorySystem):
    name = "probe"

    def __init__(self, context):
        self.context = context

    def ingest(self, documents):
        s = self.context.settings
        reply = self.context.models.chat(role="judge", messages=[{"role": "user", "content": "Say OK."}],
                                         max_tokens=2)
        endpoint = CONFIGS[0].pluginmanager.get_plugin("beam-session").session.endpoint
        model = endpoint.model  # None on an xdist worker: the controller started the model
        row = {"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "base_url": s.base_url, "model": s.model,
               "concurrency": s.concurrency, "timeout": s.timeout, "tool_mode": s.tool_mode,
               "agent_timeout": s.agent_timeout, "max_calls": s.max_calls, "reply": reply.text,
               "server_pid": model.pid if model is not None else None,
               "cache_identity": self.context.models.endpoint.cache_identity}
        with open(os.path.join(os.environ["PROBE_OUT"], f"conv{self.context.conversation_id}.json"), "w") as fh:
            json.dump(row, fh)
        if os.environ.get("PROBE_HANG"):
            time.sleep(600)
        pytest.skip("probed")

    def answer(self, question):
        return SystemAnswer(text="unused")

    def close(self):
        pass


def pytest_beam_make_system(context):
    return Probe(context)
'''


def run_args(project: Path, beam_data_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
            f"--beam-data={beam_data_dir}", "--beam-cache=off", f"--beam-results={project / 'results'}", "-rs", *args]


def clean_env(out: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEAM_BASE_URL", "BEAM_MODEL", "OPENAI_"))}
    return {**env, "PROBE_OUT": str(out), **extra}


def refuses(base_url: str) -> bool:
    parts = urlsplit(base_url)
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((parts.hostname, parts.port)) != 0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "out").mkdir()
    return tmp_path


def test_xdist_workers_use_the_controllers_one_embedded_model_and_it_stops(project, beam_data_dir):
    """Both workers call the controller's one server, with the embedded model's defaults for what the
    user did not set and the user's settings where they did (a flag, --beam-concurrency, and a
    variable, BEAM_TIMEOUT): explicit settings win. (Issue 40 folded the one-process run that checked
    the winning settings into this one: the same embedded_changes() decides both.)"""
    cmd = run_args(project, beam_data_dir, "--beam-mode=full", "--beam-conversations=1,4", "-k", "abstention",
                   "-n", "2", "--beam-model=local", "--beam-concurrency=2")
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=900,
                          env=clean_env(project / "out", BEAM_TIMEOUT="60"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.stdout.count("embedded model: starting llama.cpp's server") == 1, proc.stdout
    rows = [json.loads(p.read_text()) for p in sorted((project / "out").glob("*.json"))]
    assert len(rows) == 2 and {r["worker"] for r in rows} == {"gw0", "gw1"}, rows
    assert len({r["base_url"] for r in rows}) == 1 and rows[0]["base_url"].startswith("http://127.0.0.1:")
    for row in rows:
        assert row["model"] == embedded.MODEL_NAME
        # given: concurrency 2 (a flag), timeout 60 (a variable); the embedded model's defaults for the rest
        assert (row["concurrency"], row["timeout"], row["tool_mode"], row["max_calls"]) == (2, 60.0, "json", None)
        assert row["agent_timeout"] == 1800.0
        assert row["reply"]  # the worker's call reached the controller's server
        assert row["server_pid"] is None  # a worker holds no model of its own
        # the response cache knows the embedded model by its file, not by this run's port
        assert row["cache_identity"] == embedded.CACHE_IDENTITY == f"embedded:{embedded.GGUF_SHA256}"
    assert refuses(rows[0]["base_url"])  # stopped at the end of the session


def test_sigterm_mid_run_stops_the_embedded_model(project, beam_data_dir):
    cmd = run_args(project, beam_data_dir, "--beam-mode=full", "--beam-conversations=4", "-k", "abstention")
    proc = subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=clean_env(project / "out", PROBE_HANG="1"))
    probe = project / "out" / "conv4.json"
    deadline = time.monotonic() + 600
    while not probe.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    try:
        assert probe.exists(), proc.communicate(timeout=60)[0] if proc.poll() is not None else "no probe"
        time.sleep(0.5)  # the file is written whole before the sleep begins
        row = json.loads(probe.read_text())
        pid = row["server_pid"]
        assert pid and not refuses(row["base_url"])
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert refuses(row["base_url"])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)

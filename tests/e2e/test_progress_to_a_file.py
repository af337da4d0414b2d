"""Progress lines reach a log file while the step they describe runs, not at the end of the run.

CI logs and `pytest ... > run.log` are files, where Python buffers stdout in blocks: a line
written without a flush sits in the buffer while ingest waits on the model. The run here has no
PYTHONUNBUFFERED (this machine's shell sets it; a newcomer's does not), and the model holds
every call, so the ingest's first line must be in the file while the run is stuck on its first
call.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.e2e.gated_runs import GatedModel
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_the_ingest_progress_line_is_in_the_log_file_while_ingest_waits(tmp_path, beam_data_dir, workers):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    log = tmp_path / "run.log"
    model = GatedModel(paid=0)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with ScriptedModelServer(responder=model) as server, log.open("w") as out:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=full",
               "-k", "conv17", f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}",
               "--beam-model=scripted", "--beam-neo4j=local", "--beam-cache=off", "--beam-max-retries=0",
               "--beam-concurrency=1", "--beam-timeout=600", f"--beam-results={tmp_path / 'results'}",
               "--beam-max-calls=100000", "--beam-max-tokens=100000000", "--beam-snapshot=off", *workers]
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            model.wait_for(lambda: model.waiting >= 1, "the first extraction call reaches the model")
            deadline = time.monotonic() + 20  # under xdist the controller relays a worker's lines each second
            while "conv17 ingest: 0/" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
            text = log.read_text()
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            model.gate.set()
    assert "conv17 ingest: 0/" in text, text[-3000:]

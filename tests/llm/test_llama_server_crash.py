"""A model server that dies at load is one clear error, tried once, and nothing else is stopped.

The server here is the product's own child (llama.cpp's prebuilt server in a child Python
process): its model file is a FIFO, so loading blocks, and the test kills the child with SIGSEGV
while it loads, as a build that cannot run on a CPU dies. A ``llama-server`` binary given in its
place (the bench's source build) is held to the same rule."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from pytest_beam.llm import llama_server
from pytest_beam.llm.llama_server import LlamaServer, LlamaServerCrashed

_REASON = None
try:
    llama_server.require_server()
except llama_server.LlamaServerUnavailable as exc:
    _REASON = str(exc)
needs_server = pytest.mark.skipif(_REASON is not None, reason=f"the local extra is not installed: {_REASON}")


def segv_while_loading(server: LlamaServer, after: float = 1.0) -> threading.Thread:
    """SIGSEGV to the server's process once it has started loading (a FIFO never finishes)."""

    def kill() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (server.proc is None or "loading model" not in server.log_tail()):
            time.sleep(0.1)
        time.sleep(after)
        if server.proc is not None:
            os.kill(server.proc.pid, signal.SIGSEGV)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


@needs_server
def test_a_crash_at_load_is_one_error_naming_the_signal_and_the_server_is_gone(tmp_path):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    server = LlamaServer(fifo, alias="m", threads=1, startup_timeout=60)
    killer = segv_while_loading(server)
    with pytest.raises(LlamaServerCrashed) as err:
        server.start()
    killer.join()
    assert str(err.value).startswith("the model server was killed by SIGSEGV (exit code -11) before it was ready")
    assert "loading model" in str(err.value)  # the tail of the server's own log
    assert server.proc is not None and server.proc.returncode == -signal.SIGSEGV and not server.running


@needs_server
def test_the_embedded_model_says_in_one_line_that_its_server_crashed(tmp_path, monkeypatch):
    from pytest_beam.llm import embedded

    if embedded.unavailable_reason() is not None:
        pytest.skip(embedded.unavailable_reason())
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    monkeypatch.setattr(embedded, "assemble_gguf", lambda path, progress: fifo)  # the file check is not this test's
    model = embedded.EmbeddedModel(threads=1, startup_timeout=60)
    launch = LlamaServer._launch

    def launch_and_arm(self, port):
        launch(self, port)
        segv_while_loading(self)

    monkeypatch.setattr(LlamaServer, "_launch", launch_and_arm)
    with pytest.raises(embedded.EmbeddedModelError) as err:
        model.start()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("embedded model: the model server was killed by SIGSEGV (exit code -11) before it "
                              f"was ready while loading {fifo}"), message
    assert "nothing else was stopped" in message and not model.running


def test_a_source_built_binary_that_crashes_is_tried_once(tmp_path):
    calls = tmp_path / "calls.txt"
    binary = tmp_path / "llama-server"
    binary.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\necho "load_tensors: loading model"\nkill -SEGV $$\n')
    binary.chmod(0o755)
    server = LlamaServer(tmp_path / "m.gguf", alias="m", binary=binary, startup_timeout=10)
    with pytest.raises(LlamaServerCrashed) as err:
        server.start()
    assert "killed by SIGSEGV" in str(err.value) and "load_tensors: loading model" in str(err.value)
    tries = calls.read_text().splitlines()
    assert len(tries) == 1 and tries[0].startswith(f"--model {tmp_path / 'm.gguf'} --alias m --host 127.0.0.1")


def test_the_child_refuses_a_flag_it_does_not_know(tmp_path):
    """One command line serves both servers, so the child must not drop a flag it cannot honour."""
    server = LlamaServer(tmp_path / "m.gguf", alias="m", extra_args=["--no-such-flag"], startup_timeout=30)
    if _REASON is not None:
        pytest.skip(_REASON)
    with pytest.raises(llama_server.LlamaServerError) as err:
        server.start()
    assert "exited with code 2" in str(err.value) and "unrecognized arguments: --no-such-flag" in str(err.value)

"""A llama-server that crashes at model load (pip's native build on a CPU with AMX: SIGSEGV in
ggml's AMX kernels) is started once more without weight repacking, and a second crash is one line
that says how to rebuild it. The server here is a real process that dies the way that build did."""

from __future__ import annotations

import signal

import pytest

from pytest_beam.llm.llama_server import NO_REPACK, LlamaServer, LlamaServerCrashed, cpu_advertises_amx


def crashing_binary(tmp_path, crash_with_repack_only: bool):
    calls = tmp_path / "calls.txt"
    script = tmp_path / "llama-server"
    condition = f'case " $* " in *" {NO_REPACK} "*) exec sleep 60;; esac\n' if crash_with_repack_only else ""
    script.write_text("#!/bin/sh\n"
                      f'echo "$*" >> "{calls}"\n'
                      'echo "load_tensors: loading model"\n'
                      f"{condition}"
                      "kill -SEGV $$\n")
    script.chmod(0o755)
    return script, calls


@pytest.mark.parametrize("amx", [False, True], ids=["cpu-without-amx", "cpu-with-amx"])
def test_a_crash_at_load_is_tried_again_without_repacking(tmp_path, monkeypatch, amx):
    """Without AMX the first start repacks and its crash is tried once more without; with AMX the
    first start already has no repacking, so its crash is the last word (nothing else to try).
    The CPU's word is set here: the test expected two tries on every machine and failed on this
    one, whose CPU advertises AMX."""
    from pytest_beam.llm import llama_server

    monkeypatch.setattr(llama_server, "cpu_advertises_amx", lambda *args: amx)
    binary, calls = crashing_binary(tmp_path, crash_with_repack_only=False)
    server = LlamaServer(tmp_path / "m.gguf", alias="m", binary=binary, startup_timeout=10)
    with pytest.raises(LlamaServerCrashed) as err:
        server.start()
    assert f"code {-signal.SIGSEGV}" in str(err.value)
    tries = calls.read_text().splitlines()
    assert len(tries) == (1 if amx else 2) and tries[-1].split().count(NO_REPACK) == 1
    assert (NO_REPACK in tries[0]) == amx  # on a CPU with AMX it is there from the start


def test_the_retry_without_repacking_is_the_one_that_runs(tmp_path):
    binary, calls = crashing_binary(tmp_path, crash_with_repack_only=True)
    server = LlamaServer(tmp_path / "m.gguf", alias="m", binary=binary, startup_timeout=3)
    with pytest.raises(Exception) as err:  # this stand-in never answers /health: a timeout, not a crash
        server.start()
    assert not isinstance(err.value, LlamaServerCrashed) and "not ready after" in str(err.value)
    assert NO_REPACK in calls.read_text().splitlines()[-1]
    assert not server.running


def test_the_embedded_model_says_in_one_line_how_to_rebuild(tmp_path, monkeypatch):
    from pytest_beam.llm import embedded

    if embedded.unavailable_reason() is not None:
        pytest.skip(embedded.unavailable_reason())
    binary, _ = crashing_binary(tmp_path, crash_with_repack_only=False)
    monkeypatch.setattr(embedded, "_binary", lambda: binary)
    model = embedded.EmbeddedModel(startup_timeout=10)
    with pytest.raises(embedded.EmbeddedModelError) as err:
        model.start()
    message = str(err.value)
    assert "\n" not in message
    assert "crashed at model load" in message and "LLAMA_REBUILD=1" in message and "install-live-model.sh" in message


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("flags\t\t: fpu avx2 avx512f amx_bf16 amx_tile amx_int8\n")
    assert cpu_advertises_amx(info)
    info.write_text("flags\t\t: fpu avx2 avx512f avx512_vnni\n")
    assert not cpu_advertises_amx(info)
    assert not cpu_advertises_amx(tmp_path / "missing")

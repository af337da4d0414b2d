"""Live tests of the embedded model: the real 1.1 GB GGUF and llama.cpp's server on 127.0.0.1.

They check that the file assembled from the installed parts is the one expected (and that a
tampered copy is refused), and the server's structure: it starts, answers, keeps to a JSON
schema, and leaves no process behind. Answers stay short (small ``max_tokens``): on 2 cores the
model makes about 20 tokens a second. Skipped only when the ``local`` extra's parts or
xllamacpp are not installed (``.ci/install-live-model.sh`` installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from pytest_beam.llm import embedded
from pytest_beam.llm.embedded import EmbeddedModel, ModelFileMismatch

_REASON = embedded.unavailable_reason()

pytestmark = [
    pytest.mark.live_model,
    pytest.mark.skipif(_REASON is not None, reason=f"embedded model not installed: {_REASON}"),
]


@pytest.fixture(scope="module")
def model(embedded_model: EmbeddedModel) -> EmbeddedModel:
    return embedded_model  # the live tests' one server (tests/live/conftest.py)


@pytest.fixture(scope="module")
def client(model: EmbeddedModel):
    openai = pytest.importorskip("openai")
    # A loaded 2-core machine can take a minute per call; never retry (hides failures).
    return openai.OpenAI(base_url=model.base_url, api_key=model.api_key, timeout=600,
                         max_retries=0)


def test_the_assembled_file_has_the_expected_size_and_hash() -> None:
    path = embedded.assemble_gguf()  # assembles on first use, then verifies the cached file
    assert path == embedded.default_gguf_path()
    assert path.stat().st_size == embedded.GGUF_SIZE == 1_117_320_768
    embedded.verify_gguf(path)  # size and sha256, or ModelFileMismatch


def test_a_tampered_copy_in_another_cache_is_refused(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    original = embedded.assemble_gguf()  # the verified file in the real cache
    monkeypatch.setenv("BEAM_CACHE_DIR", str(tmp_path))
    copy = embedded.default_gguf_path()
    assert copy.is_relative_to(tmp_path)
    copy.parent.mkdir(parents=True)
    shutil.copyfile(original, copy)
    with open(copy, "r+b") as fh:  # flip one byte in the middle of the weights
        fh.seek(embedded.GGUF_SIZE // 2)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0xFF]))
    em = EmbeddedModel()
    with pytest.raises(ModelFileMismatch) as info:
        em.start()
    message = str(info.value)
    assert str(copy) in message and f"instead of {embedded.GGUF_SHA256}" in message
    assert "\n" not in message
    assert not em.running


def test_server_serves_the_model_with_its_own_template(model: EmbeddedModel) -> None:
    assert model.base_url.startswith("http://127.0.0.1:") and model.base_url.endswith("/v1")
    assert model.server is not None
    models = model.server.get_json("/v1/models")
    assert [m["id"] for m in models["data"]] == [embedded.MODEL_NAME]
    assert models["data"][0]["meta"]["n_ctx"] >= 8192
    props = model.server.get_json("/props")
    assert "<|im_start|>" in props["chat_template"]  # Qwen's own ChatML template, from the GGUF


def test_chat_completion_answers(model: EmbeddedModel, client) -> None:
    resp = client.chat.completions.create(
        model=model.model_name,
        messages=[{"role": "user", "content": "What is the capital of France? One word."}],
        max_tokens=8, temperature=0, seed=1,
    )
    choice = resp.choices[0]
    assert "paris" in (choice.message.content or "").lower()
    assert resp.usage.prompt_tokens > 0 and 0 < resp.usage.completion_tokens <= 8


def test_json_schema_response_format_gives_valid_json(model: EmbeddedModel, client) -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "number", "enum": [0.0, 0.5, 1.0]},
            "reason": {"type": "string", "maxLength": 60},
        },
        "required": ["score", "reason"],
    }
    resp = client.chat.completions.create(
        model=model.model_name,
        messages=[{"role": "user", "content":
                   "Rubric: the answer names Paris. Answer: 'Paris.' Score it 0, 0.5 or 1 in JSON."}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": "verdict", "schema": schema, "strict": True}},
        max_tokens=60, temperature=0, seed=1,
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    verdict = json.loads(choice.message.content)
    assert set(verdict) == {"score", "reason"}
    assert verdict["score"] in (0.0, 0.5, 1.0) and len(verdict["reason"]) <= 60


def test_stop_leaves_no_process_and_frees_the_port() -> None:
    em = EmbeddedModel(ctx_size=2048)
    base_url, name = em.start()
    assert name == embedded.MODEL_NAME
    pid = em.pid
    assert pid is not None
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    em.stop()
    assert not em.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped: no zombie, no orphan
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    em.stop()  # idempotent

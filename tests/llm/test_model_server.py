"""The scripted server itself (spoken to with plain urllib, no model layer involved)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from tests.model_server import Reply, Router, ScriptedModelServer, tool_call


def post(server: ScriptedModelServer, path: str, body: dict) -> tuple[int, dict, dict]:
    req = urllib.request.Request(server.base_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello world, how are you"}]}


def test_queue_text_tool_calls_json_and_errors(model_server):
    model_server.script(
        Reply.say("hi"),
        Reply.calls(tool_call("search", {"q": "x"}, id="c1")),
        Reply.json_object({"a": 1}),
        Reply.fail(429, retry_after=3),
    )
    status, _, body = post(model_server, "/chat/completions", CHAT)
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "hi"
    assert body["usage"] == {"prompt_tokens": 6, "completion_tokens": 1, "total_tokens": 7}

    _, _, body = post(model_server, "/chat/completions", CHAT)
    msg = body["choices"][0]
    assert msg["finish_reason"] == "tool_calls"
    assert msg["message"]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}]

    _, _, body = post(model_server, "/chat/completions", CHAT)
    assert json.loads(body["choices"][0]["message"]["content"]) == {"a": 1}

    status, headers, body = post(model_server, "/chat/completions", CHAT)
    assert status == 429 and headers["Retry-After"] == "3"
    assert body["error"]["type"] == "rate_limit_error"

    assert model_server.request_count == 4
    assert model_server.requests[0].text == "hello world, how are you"
    assert model_server.served_usage == {"responses": 3, "prompt_tokens": 18, "completion_tokens": 1 + 2 + 2}


def test_unscripted_request_is_a_loud_400(model_server):
    status, _, body = post(model_server, "/chat/completions", CHAT)
    assert status == 400 and "no reply scripted" in body["error"]["message"]
    assert model_server.unscripted == 1


def test_responder_and_router_route_on_content(model_server_factory):
    router = (Router(default="fallback")
              .on("Extract", Reply.json_object({"entities": []}))
              .on(lambda req: bool(req.get("tools")), Reply.calls(tool_call("lookup")))
              .on("judge", lambda req: {"score": len(req["messages"])}))
    server = model_server_factory(responder=router)

    def ask(text, **kw):
        return post(server, "/chat/completions",
                    {"model": "m", "messages": [{"role": "user", "content": text}], **kw})[2]

    assert json.loads(ask("Extract entities")["choices"][0]["message"]["content"]) == {"entities": []}
    tool_call_reply = ask("x", tools=[{"type": "function"}])["choices"][0]["message"]["tool_calls"][0]
    assert tool_call_reply["function"]["name"] == "lookup"
    assert json.loads(ask("you are a judge")["choices"][0]["message"]["content"]) == {"score": 1}
    assert ask("other")["choices"][0]["message"]["content"] == "fallback"
    server.script("queued wins")
    assert ask("Extract")["choices"][0]["message"]["content"] == "queued wins"


def test_quirks_embeddings_usage_override_and_raw(model_server_factory):
    server = model_server_factory(supports_json_schema=False, supports_seed=False, embedding_dim=4)
    status, _, body = post(server, "/chat/completions", {**CHAT, "seed": 1})
    assert status == 400 and "seed" in body["error"]["message"]
    status, _, body = post(server, "/chat/completions", {**CHAT, "response_format": {"type": "json_schema"}})
    assert status == 400 and "json_schema" in body["error"]["message"]
    server.script(Reply.say("x", usage={"prompt_tokens": 11, "completion_tokens": 7}), Reply.say("y", no_usage=True),
                  Reply.raw(b'{"weird": true}'))
    assert post(server, "/chat/completions", CHAT)[2]["usage"]["prompt_tokens"] == 11
    assert "usage" not in post(server, "/chat/completions", CHAT)[2]
    assert post(server, "/chat/completions", CHAT)[2] == {"weird": True}

    status, _, body = post(server, "/embeddings", {"model": "e", "input": ["a", "b"]})
    assert status == 200 and [d["index"] for d in body["data"]] == [0, 1]
    vec = body["data"][0]["embedding"]
    assert len(vec) == 4 and abs(sum(x * x for x in vec) - 1) < 1e-4
    assert post(server, "/embeddings", {"model": "e", "input": ["a"]})[2]["data"][0]["embedding"] == vec
    assert len(server.embedding_requests) == 2 and len(server.chat_requests) == 5


def test_measures_requests_in_flight(model_server_factory):
    server = model_server_factory(default_reply="ok", latency=0.15)
    threads = [threading.Thread(target=post, args=(server, "/chat/completions", CHAT)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert server.max_in_flight == 3 and server.in_flight == 0


def test_stop_closes_the_port():
    server = ScriptedModelServer(default_reply="ok").start()
    url = server.base_url
    assert post(server, "/chat/completions", CHAT)[0] == 200
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(urllib.request.Request(url + "/chat/completions", data=b"{}", method="POST"), timeout=2)

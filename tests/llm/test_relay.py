"""The model relay (issue 29): a real HTTP server that a third-party library's own `openai` client
calls, every call going through the run's ModelClient (meter rows by system and role, cache,
cassette, caps, trace), embeddings from the run's embedder, failures kept for the adapter."""

from __future__ import annotations

import base64
import json
import struct
import urllib.request

import openai
import pytest

from pytest_beam.llm import Budget, BudgetExceeded, Cassette, CassetteMiss, Meter, ModelEndpointError, ResponseCache
from pytest_beam.llm.relay import ModelRelay
from tests.model_server import Reply


def fake_embed(system, texts):
    return [[1.0, 0.0, 0.0] if "a" in t else [0.0, 1.0, 0.0] for t in texts]


@pytest.fixture
def relay_for():
    relays = []

    def make(client):
        relay = ModelRelay(client, fake_embed, dimensions=3).start()
        relays.append(relay)
        return relay

    yield make
    for relay in relays:
        relay.close()


def sdk(relay, system="mem0", role="extraction"):
    return openai.OpenAI(base_url=relay.base_url(system, role), api_key="unused")


def test_a_library_call_is_metered_under_its_system_and_role(model_server, make_client, relay_for):
    model_server.script(Reply.json_object({"memory": []}, usage={"prompt_tokens": 50, "completion_tokens": 7}))
    events = []
    client = make_client(model_server, meter=Meter(), trace=events.append)
    relay = relay_for(client)
    reply = sdk(relay).chat.completions.create(model="whatever", messages=[{"role": "user", "content": "hi"}],
                                               response_format={"type": "json_object"}, max_tokens=33, top_p=0.5)
    assert json.loads(reply.choices[0].message.content) == {"memory": []}
    [sent] = model_server.chat_requests
    # the role's model, the run's temperature and seed; the caller's max_tokens and format go through
    assert sent.body["model"] == "agent-model" and sent.body["temperature"] == 0.0 and sent.body["seed"] == 0
    assert sent.body["max_tokens"] == 33 and sent.body["response_format"] == {"type": "json_object"}
    assert "top_p" not in sent.body
    usage = client.meter.snapshot()
    assert list(usage) == ["mem0 extraction"]
    assert usage["mem0 extraction"].calls == 1 and usage["mem0 extraction"].prompt_tokens == 50
    assert relay.counts() == {"mem0": {"chat": 1, "embeddings": 0, "errors": 0}}
    [event] = events
    assert event["role"] == "extraction" and event["via"] == "relay" and event["relay_system"] == "mem0"


def test_embeddings_come_from_the_run_embedder_as_floats_and_as_base64(model_server, make_client, relay_for):
    relay = relay_for(make_client(model_server, meter=Meter()))
    floats = sdk(relay, "graphiti").embeddings.create(model="m", input=["a text", "other"], encoding_format="float")
    assert [d.embedding for d in floats.data] == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    # the openai SDK asks for base64 when the caller names no format (Graphiti's embedder does not)
    raw = sdk(relay, "graphiti").embeddings.with_raw_response.create(model="m", input="a", encoding_format="base64")
    packed = json.loads(raw.http_response.text)["data"][0]["embedding"]
    assert list(struct.unpack("<3f", base64.b64decode(packed))) == [1.0, 0.0, 0.0]
    default = sdk(relay, "graphiti").embeddings.create(model="m", input="b")
    assert default.data[0].embedding == [0.0, 1.0, 0.0]
    assert relay.counts()["graphiti"]["embeddings"] == 3 and model_server.request_count == 0


def test_a_relayed_call_is_cached_and_replayed_from_a_cassette(model_server, make_client, relay_for, tmp_path):
    model_server.script(Reply.say("remembered"))
    cassette_path = tmp_path / "c.jsonl"
    live = make_client(model_server, meter=Meter(), cache=ResponseCache(tmp_path / "cache"),
                       cassette=Cassette(cassette_path, mode="all"))
    relay = relay_for(live)
    messages = [{"role": "user", "content": "what do you remember?"}]
    assert sdk(relay).chat.completions.create(model="m", messages=messages).choices[0].message.content == "remembered"
    assert sdk(relay).chat.completions.create(model="m", messages=messages).choices[0].message.content == "remembered"
    assert model_server.request_count == 1  # the second came from the cache
    assert live.meter.snapshot()["mem0 extraction"].cached_calls == 1
    # offline: no endpoint at all, the cassette answers
    replay = make_client(None, meter=Meter(), cassette=Cassette(cassette_path, mode="none"))
    offline = relay_for(replay)
    got = sdk(offline).chat.completions.create(model="m", messages=messages)
    assert got.choices[0].message.content == "remembered"
    assert replay.meter.snapshot()["mem0 extraction"].replayed_calls == 1


def test_a_cassette_miss_is_kept_for_the_adapter_and_not_retried(make_client, relay_for, tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    Cassette(tmp_path / "empty.jsonl", mode="all")  # a valid, empty cassette
    client = make_client(None, meter=Meter(), cassette=Cassette(tmp_path / "empty.jsonl", mode="none"))
    relay = relay_for(client)
    with pytest.raises(openai.APIStatusError) as caught:
        sdk(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "new"}])
    assert caught.value.status_code == 409 and "cassette" in caught.value.message
    assert relay.counts()["mem0"] == {"chat": 1, "embeddings": 0, "errors": 1}  # one request: no retry
    with pytest.raises(CassetteMiss) as kept:
        relay.raise_failure("mem0", caught.value)
    assert kept.value.__cause__ is caught.value
    assert relay.take_failure("mem0") is None  # taken once


def test_the_spend_cap_stops_a_library_call_before_the_endpoint(model_server, make_client, relay_for):
    model_server.script(Reply.say("one"), Reply.say("two"))
    client = make_client(model_server, meter=Meter(), budget=Budget(max_calls=1))
    relay = relay_for(client)
    sdk(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "first"}])
    with pytest.raises(openai.RateLimitError):
        sdk(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "second"}])
    assert model_server.request_count == 1
    assert isinstance(relay.take_failure("mem0"), BudgetExceeded)
    assert relay.counts()["mem0"] == {"chat": 2, "embeddings": 0, "errors": 1}


def test_an_endpoint_failure_reaches_the_caller_once_after_the_clients_retries(model_server, make_client, relay_for):
    model_server.script(*[Reply.fail(500)] * 3)  # a failure; a 429 would be waited on (throttle_wait_s)
    client = make_client(model_server, meter=Meter(), endpoint={"max_retries": 2})
    relay = relay_for(client)
    with pytest.raises(openai.APIStatusError) as caught:
        sdk(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 502
    assert model_server.request_count == 3  # the harness's retries only; the SDK did not multiply them
    assert isinstance(relay.take_failure("mem0"), ModelEndpointError)
    assert client.meter.snapshot()["mem0 extraction"].errors == 1


def test_what_the_relay_does_not_serve_is_refused_with_the_reason(model_server, make_client, relay_for):
    relay = relay_for(make_client(model_server, meter=Meter()))
    with pytest.raises(openai.BadRequestError, match="does not stream"):
        sdk(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
    with pytest.raises(openai.BadRequestError, match="one choice"):
        sdk(relay).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], n=2)
    with pytest.raises(openai.NotFoundError, match="unknown role"):
        openai.OpenAI(base_url=relay.base_url("mem0", "agent").replace("/agent/", "/boss/"), api_key="x",
                      max_retries=0).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="unknown role"):
        relay.base_url("mem0", "boss")
    models = json.loads(urllib.request.urlopen(relay.base_url("mem0", "judge") + "/models").read())
    assert models["data"][0]["id"] == "judge-model"
    assert model_server.request_count == 0


def test_a_system_s_completion_cap_bounds_what_its_library_asks_for(model_server, make_client, relay_for):
    # found recording Graphiti on the embedded model: its edge extraction asks for 16,384 tokens
    # whatever its config says, and a 1.5B model repeating itself filled them for over 20 minutes
    model_server.script(*[Reply.say("ok") for _ in range(4)])
    relay = relay_for(make_client(model_server, meter=Meter()))
    relay.cap_completion("graphiti", 2048)
    messages = [{"role": "user", "content": "hi"}]
    sdk(relay, "graphiti").chat.completions.create(model="m", messages=messages, max_tokens=16384)
    sdk(relay, "graphiti").chat.completions.create(model="m", messages=messages, max_tokens=100)
    sdk(relay, "graphiti").chat.completions.create(model="m", messages=messages)
    sdk(relay, "mem0").chat.completions.create(model="m", messages=messages, max_tokens=16384)  # no cap of its own
    assert [r.body.get("max_tokens") for r in model_server.chat_requests] == [2048, 100, 2048, 16384]
    with pytest.raises(ValueError, match="1 or more"):
        relay.cap_completion("graphiti", 0)

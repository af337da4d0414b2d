"""ModelClient against the scripted server, through the real openai client."""

from __future__ import annotations

import email.utils
import time

import pytest

from pytest_beam.llm import EndpointConfig, ModelEndpointError, RoleModels, Usage, parse_retry_after
from tests.model_server import Reply, tool_call

USER = [{"role": "user", "content": "What did I say about the trip to Lisbon last week?"}]
TOOLS = [{"type": "function", "function": {"name": "search_graph", "description": "search",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]


def test_metering_sums_match_what_the_server_returned(model_server, make_client):
    client = make_client(model_server)
    model_server.script(
        Reply.say("one", usage={"prompt_tokens": 100, "completion_tokens": 10}),
        Reply.say("two", usage={"prompt_tokens": 200, "completion_tokens": 20}),
        Reply.say("three", usage={"prompt_tokens": 50, "completion_tokens": 5}),
        Reply.say("no usage field", no_usage=True),
    )
    client.chat(role="agent", messages=USER)
    client.chat(role="agent", messages=USER)
    client.chat(role="judge", messages=USER)
    client.chat(role="extraction", messages=USER)
    snap = client.meter.snapshot()
    assert (snap["agent"].calls, snap["agent"].prompt_tokens, snap["agent"].completion_tokens) == (2, 300, 30)
    assert (snap["judge"].calls, snap["judge"].prompt_tokens, snap["judge"].completion_tokens) == (1, 50, 5)
    assert (snap["extraction"].calls, snap["extraction"].tokens, snap["extraction"].usage_missing) == (1, 0, 1)
    total = client.meter.total()
    assert total.prompt_tokens == model_server.served_usage["prompt_tokens"] == 350
    assert total.completion_tokens == model_server.served_usage["completion_tokens"] == 35
    assert total.calls == model_server.request_count == 4
    assert all(u.seconds > 0 for u in snap.values())


def test_sends_model_per_role_temperature_and_seed(model_server, make_client):
    client = make_client(model_server, models=RoleModels(agent="big", extraction="small"),
                         endpoint={"seed": 7, "temperature": 0.0})
    model_server.script("a", "b", "c")
    client.chat(role="extraction", messages=USER, max_tokens=50)
    client.chat(role="resolution", messages=USER)
    first, second = model_server.chat_requests
    assert first.model == "small" and second.model == "big"
    assert first.body["temperature"] == 0.0 and first.body["seed"] == 7 and first.body["max_tokens"] == 50
    no_seed = make_client(model_server, endpoint={"seed": None})
    no_seed.chat(role="agent", messages=USER)
    assert "seed" not in model_server.last_request.body


def test_seed_rejected_is_dropped_and_remembered(model_server_factory, make_client):
    server = model_server_factory(supports_seed=False, default_reply="fine")
    client = make_client(server)
    assert client.chat(role="agent", messages=USER).text == "fine"
    assert [("seed" in r.body) for r in server.requests] == [True, False]
    assert client.sends_seed is False
    client.chat(role="agent", messages=USER)
    assert server.request_count == 3 and "seed" not in server.last_request.body
    assert client.meter.snapshot()["agent"].calls == 2


def test_native_tool_calls_pass_through_and_parse(model_server, make_client):
    client = make_client(model_server)
    model_server.script(Reply.calls(tool_call("search_graph", {"q": "Lisbon"}, id="call_a"),
                                    tool_call("search_graph", "not json", id="call_b")))
    result = client.chat(role="agent", messages=USER, tools=TOOLS, tool_choice="auto")
    sent = model_server.last_request.body
    assert sent["tools"] == TOOLS and sent["tool_choice"] == "auto"
    assert result.finish_reason == "tool_calls" and result.text is None
    a, b = result.tool_calls
    assert (a.id, a.name, a.arguments, a.raw_arguments) == (
        "call_a", "search_graph", {"q": "Lisbon"}, '{"q": "Lisbon"}')
    assert b.arguments == {} and b.raw_arguments == "not json" and "not valid JSON" in b.arguments_error
    assert result.to_message()["tool_calls"][0]["function"] == {"name": "search_graph", "arguments": '{"q": "Lisbon"}'}


def test_429_then_200_is_one_successful_call(model_server, make_client):
    client = make_client(model_server)
    model_server.script(Reply.fail(429, "slow down", retry_after=0), Reply.say("ok"))
    result = client.chat(role="judge", messages=USER)
    assert result.text == "ok"
    assert model_server.request_count == 2
    usage = client.meter.snapshot()["judge"]
    assert (usage.calls, usage.retries, usage.errors) == (1, 1, 0)


def test_a_busy_endpoint_is_waited_on_beyond_max_retries_within_the_throttle_wait(model_server, make_client):
    """bench/throughput.py, C 16 under -n 5: six 429s in a row were the queue of five processes, not a
    failure, yet they errored the call and 60 of 100 questions with it. A 429 does not count against
    max_retries while the call has waited less than throttle_wait_s."""
    client = make_client(model_server, endpoint={"max_retries": 1, "throttle_wait_s": 30})
    model_server.script(*[Reply.fail(429, "over capacity", retry_after=0)] * 6, Reply.say("ok"))
    assert client.chat(role="extraction", messages=USER).text == "ok"
    assert model_server.request_count == 7
    usage = client.meter.snapshot()["extraction"]
    assert (usage.calls, usage.retries, usage.errors) == (1, 6, 0)  # every request the endpoint got, metered


def test_a_busy_endpoint_past_the_throttle_wait_fails_after_max_retries(model_server, make_client):
    client = make_client(model_server, endpoint={"max_retries": 2, "throttle_wait_s": 0.3})
    model_server.script(*[Reply.fail(429, "over capacity", retry_after=0.1)] * 20)
    with pytest.raises(ModelEndpointError, match="last status 429") as info:
        client.chat(role="extraction", messages=USER)
    # about 0.3 s of waiting on busy answers, then the two retries max_retries allows
    assert 3 <= info.value.attempts <= 6 and model_server.request_count == info.value.attempts


def test_max_retries_0_retries_not_even_a_busy_answer(model_server, make_client):
    client = make_client(model_server, endpoint={"max_retries": 0})
    model_server.script(Reply.fail(429, "over capacity", retry_after=0), Reply.say("never"))
    with pytest.raises(ModelEndpointError, match="last status 429"):
        client.chat(role="extraction", messages=USER)
    assert model_server.request_count == 1


def test_500_until_the_last_retry_is_a_clear_error(model_server, make_client):
    client = make_client(model_server, endpoint={"max_retries": 4})
    model_server.script(*[Reply.fail(500, "upstream exploded")] * 5)
    with pytest.raises(ModelEndpointError) as info:
        client.chat(role="agent", messages=USER)
    err = info.value
    assert model_server.request_count == 5 and err.attempts == 5
    assert err.status == 500 and err.model == "agent-model" and err.role == "agent"
    assert err.base_url == model_server.base_url
    message = str(err)
    for part in (model_server.base_url, "agent-model", "500", "agent", "5 attempt"):
        assert part in message
    usage = client.meter.snapshot()["agent"]
    # issue 32 item 5: the endpoint was sent 5 requests; the meter said calls 0, retries 0, errors 1
    assert (usage.calls, usage.retries, usage.errors) == (1, 4, 1) and usage.requests == 5


def test_other_4xx_is_not_retried(model_server, make_client):
    client = make_client(model_server)
    model_server.script(Reply.fail(401, "bad key"), Reply.say("never"))
    with pytest.raises(ModelEndpointError, match="last status 401"):
        client.chat(role="agent", messages=USER)
    assert model_server.request_count == 1


def test_timeouts_and_dropped_connections_are_retried(model_server, make_client):
    client = make_client(model_server, endpoint={"timeout_s": 0.2})
    model_server.script(Reply.say("late", delay=0.6), Reply.disconnect(), Reply.say("ok"))
    assert client.chat(role="agent", messages=USER).text == "ok"
    assert model_server.request_count == 3
    assert client.meter.snapshot()["agent"].retries == 2


def test_retry_after_is_honoured(model_server, make_client):
    client = make_client(model_server)
    model_server.script(Reply.fail(503, retry_after="0.3"), Reply.say("ok"))
    start = time.monotonic()
    client.chat(role="agent", messages=USER)
    assert 0.3 <= time.monotonic() - start < 2


def test_parse_retry_after_forms_and_cap():
    assert parse_retry_after({"retry-after": "2"}, cap_s=60) == 2
    assert parse_retry_after({"retry-after": "9999"}, cap_s=60) == 60
    assert parse_retry_after({"retry-after-ms": "250"}, cap_s=60) == 0.25
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < parse_retry_after({"retry-after": date}, cap_s=60) <= 31
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}, cap_s=60) == 0
    assert parse_retry_after({"retry-after": "soon"}, cap_s=60) is None
    assert parse_retry_after({}, cap_s=60) is None


def test_embeddings_are_metered_under_embedding(model_server, make_client):
    client = make_client(model_server)
    model_server.script_embeddings(Reply.vectors([[1.0, 0.0], [0.0, 1.0]], usage={"prompt_tokens": 9}))
    assert client.embed(["a", "b"], model="emb") == [[1.0, 0.0], [0.0, 1.0]]
    sent = model_server.last_request
    assert sent.path.endswith("/embeddings") and sent.body["input"] == ["a", "b"]
    assert sent.body["encoding_format"] == "float"
    usage = client.meter.snapshot()["embedding"]
    assert (usage.calls, usage.prompt_tokens) == (1, 9)


def test_no_base_url_means_no_network(make_client):
    client = make_client(None)
    with pytest.raises(ModelEndpointError, match="No model endpoint base URL"):
        client.chat(role="agent", messages=USER)


def test_unknown_role_is_refused(model_server, make_client):
    with pytest.raises(ValueError, match="unknown role"):
        make_client(model_server).chat(role="planner", messages=USER)
    assert model_server.request_count == 0


def test_trace_gets_one_json_dict_per_call(model_server, make_client):
    import json

    traces: list[dict] = []
    client = make_client(model_server, trace=traces.append)
    model_server.script(Reply.calls(tool_call("search_graph", {"q": "x"})), Reply.fail(400, "nope"))
    client.chat(role="agent", messages=USER, tools=TOOLS)
    with pytest.raises(ModelEndpointError):
        client.chat(role="judge", messages=USER)
    assert len(traces) == 2
    ok, failed = traces
    json.dumps(traces)  # JSON-able
    assert ok["role"] == "agent" and ok["model"] == "agent-model" and ok["messages"] == 1
    assert ok["tools"] == ["search_graph"] and ok["tool_calls"][0]["arguments"] == {"q": "x"}
    assert ok["usage"]["calls"] == 1 and ok["cached"] is False and ok["replayed"] is False
    assert failed["role"] == "judge" and "400" in failed["error"]


def test_endpoint_config_validation_and_role_defaults():
    with pytest.raises(ValueError):
        EndpointConfig(base_url="http://x", concurrency=0)
    models = RoleModels(agent="a", judge="j")
    assert [models.for_role(r) for r in ("extraction", "resolution", "agent", "judge")] == ["a", "a", "a", "j"]
    assert Usage(calls=1, prompt_tokens=2) + Usage(calls=1, completion_tokens=3) == Usage(
        calls=2, prompt_tokens=2, completion_tokens=3)

"""An API key set in the environment / config never appears in anything the layer writes."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from pytest_beam.llm import (
    Budget,
    BudgetExceeded,
    Cassette,
    CassetteMiss,
    FileBudget,
    ModelEndpointError,
    ResponseCache,
    StructuredOutputError,
)
from tests.model_server import Reply, tool_call

KEY = "sk-CANARY-7f3a9c1e5b2d-DO-NOT-LEAK"


class Out(BaseModel):
    n: int


def test_key_appears_in_no_output(model_server, make_client, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("BEAM_API_KEY", KEY)
    traces: list[dict] = []
    texts: list[str] = []
    client = make_client(
        model_server, api_key=KEY, endpoint={"max_retries": 1},
        cache=ResponseCache(tmp_path / "cache"), cassette=Cassette(tmp_path / "c.jsonl", "all"),
        budget=FileBudget(tmp_path / "budget.json", max_calls=8), trace=traces.append,
    )
    model_server.script(
        Reply.say("plain"),
        Reply.calls(tool_call("search", {"q": "x"})),
        Reply.json_object({"n": "not a number"}), Reply.say("still bad"),
        Reply.fail(500, "error"), Reply.fail(500, "error"),
        Reply.fail(401, f"Incorrect API key provided: {KEY}"),  # a server echoing the key
    )
    client.chat(role="agent", messages=[{"role": "user", "content": "hi"}])
    client.chat(role="agent", messages=[{"role": "user", "content": "hi"}])  # cached
    client.chat(role="agent", messages=[{"role": "user", "content": "tool"}], tools=[
        {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}])
    client.embed(["e"], model="emb")
    errors: list[Exception] = []
    for call in (
        lambda: client.structured(role="extraction", messages=[{"role": "user", "content": "s"}], schema=Out),
        lambda: client.chat(role="judge", messages=[{"role": "user", "content": "5xx"}]),
        lambda: client.chat(role="judge", messages=[{"role": "user", "content": "401"}]),
    ):
        with pytest.raises((StructuredOutputError, ModelEndpointError)) as info:
            call()
        errors.append(info.value)
    over = make_client(model_server, api_key=KEY, budget=Budget(max_calls=0))
    with pytest.raises(BudgetExceeded) as info:
        over.chat(role="agent", messages=[{"role": "user", "content": "x"}])
    errors.append(info.value)
    offline = make_client(None, api_key=KEY, cassette=Cassette(tmp_path / "none.jsonl", "none"))
    with pytest.raises(CassetteMiss) as info:
        offline.chat(role="agent", messages=[{"role": "user", "content": "x"}])
    errors.append(info.value)

    assert "Incorrect API key provided: ***" in str(errors[2])  # echoed key scrubbed
    # the key really was used on the wire ...
    assert model_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    # ... and shows up nowhere else
    for err in errors:
        texts += [str(err), repr(err), json.dumps(vars(err), default=str)]
    texts += [repr(client), repr(client.endpoint), str(client.endpoint), repr(offline), repr(client.meter),
              repr(client.budget), json.dumps(traces)]
    for text in texts:
        assert KEY not in text
        assert "CANARY" not in text
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 4  # cache entries, cassette, budget
    for path in written:
        assert b"CANARY" not in path.read_bytes(), path
    assert len(traces) == 8

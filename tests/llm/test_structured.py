"""Structured output: JSON schema, fallbacks, parsing, the one retry."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from pytest_beam.llm import StructuredOutputError, StructuredParseError, extract_json_object, parse_structured
from tests.model_server import Reply


class Entity(BaseModel):
    name: str
    kind: str


class Extraction(BaseModel):
    entities: list[Entity]


GOOD = {"entities": [{"name": "Lisbon", "kind": "place"}]}
MSGS = [{"role": "system", "content": "You extract entities."}, {"role": "user", "content": "I flew to Lisbon."}]


def test_json_schema_response_format_is_sent(model_server, make_client):
    client = make_client(model_server)
    model_server.script(Reply.json_object(GOOD))
    result = client.structured(role="extraction", messages=MSGS, schema=Extraction, max_tokens=200)
    assert result.value == Extraction.model_validate(GOOD)
    assert (result.attempts, result.mode, result.usage.calls) == (1, "json_schema", 1)
    rf = model_server.last_request.body["response_format"]
    assert rf == {"type": "json_schema", "json_schema": {"name": "Extraction", "schema": Extraction.model_json_schema(),
                                                         "strict": False}}


def test_malformed_reply_is_retried_once_then_reported(model_server, make_client):
    client = make_client(model_server)
    model_server.script(Reply.json_object({"entities": [{"name": "Lisbon"}]}), Reply.say("sorry, no JSON today"))
    with pytest.raises(StructuredOutputError) as info:
        client.structured(role="extraction", messages=MSGS, schema=Extraction)
    assert model_server.request_count == 2
    second = model_server.chat_requests[1].messages
    assert second[:2] == MSGS
    assert second[2] == {"role": "assistant", "content": '{"entities": [{"name": "Lisbon"}]}'}
    assert (second[3]["role"] == "user" and "entities.0.kind" in second[3]["content"]
            and "Field required" in second[3]["content"])
    err = info.value
    assert err.attempts == 2 and err.role == "extraction" and err.schema_name == "Extraction"
    assert "no JSON object" in err.validation_error and "no JSON object" in str(err)
    assert err.raw_text == "sorry, no JSON today" and err.usage.calls == 2
    assert client.meter.snapshot()["extraction"].calls == 2


def test_valid_after_the_retry_succeeds(model_server, make_client):
    client = make_client(model_server)
    model_server.script(Reply.say("Here you go: {not json"), Reply.say("```json\n" + '{"entities": []}' + "\n```"))
    result = client.structured(role="extraction", messages=MSGS, schema=Extraction)
    assert result.value == Extraction(entities=[]) and result.attempts == 2 and result.usage.calls == 2


def test_json_schema_refused_falls_back_to_json_mode_and_remembers(model_server_factory, make_client):
    server = model_server_factory(supports_json_schema=False)
    client = make_client(server)
    server.script(Reply.json_object(GOOD), Reply.json_object(GOOD))
    result = client.structured(role="extraction", messages=MSGS, schema=Extraction)
    assert result.value.entities[0].name == "Lisbon" and result.mode == "json_object"
    refused, fallback = server.chat_requests
    assert refused.body["response_format"]["type"] == "json_schema" and refused.status == 400
    assert fallback.body["response_format"] == {"type": "json_object"}
    system = fallback.messages[0]
    assert system["role"] == "system" and system["content"].startswith("You extract entities.")
    assert '"entities"' in system["content"] and "JSON schema" in system["content"]
    assert client.meter.snapshot()["extraction"].calls == 1
    client.structured(role="extraction", messages=MSGS, schema=Extraction)  # remembered: one request
    assert server.request_count == 3 and server.last_request.body["response_format"] == {"type": "json_object"}


def test_plain_text_fallback_when_no_json_mode(model_server_factory, make_client):
    server = model_server_factory(supports_json_schema=False, supports_json_object=False)
    client = make_client(server)
    server.script(Reply.say("Sure!\n```\n" + '{"entities": []}' + "\n```"))
    result = client.structured(role="extraction", messages=[{"role": "user", "content": "x"}], schema=Extraction)
    assert result.mode == "text" and result.value.entities == []
    last = server.last_request.body
    assert "response_format" not in last and last["messages"][0]["role"] == "system"
    assert server.request_count == 3


def test_extract_json_object_and_parse():
    assert extract_json_object('noise {"a": {"b": 1}} trailing {"c": 2}') == {"a": {"b": 1}}
    assert extract_json_object("```json\n{\"x\": 1}\n```") == {"x": 1}
    assert extract_json_object("{broken {\"ok\": true}") == {"ok": True}
    for bad in ("", "   ", "[1, 2]", "no braces"):
        with pytest.raises(StructuredParseError):
            extract_json_object(bad)
    assert parse_structured('{"entities": []}', Extraction) == Extraction(entities=[])
    with pytest.raises(StructuredParseError, match="entities"):
        parse_structured('{"entity": []}', Extraction)

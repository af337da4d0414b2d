"""Judge repeats (issue 17 point 4): each repeat of a call is its own cache entry, never sent to the endpoint."""

from __future__ import annotations

from pytest_beam.llm import ResponseCache
from tests.model_server import Reply

MSGS = [{"role": "user", "content": "Judge this answer."}]


def test_each_repeat_has_its_own_cache_entry_and_repeat_0_is_the_plain_call(model_server, make_client, tmp_path):
    client = make_client(model_server, cache=ResponseCache(tmp_path / "cache"))
    model_server.script(Reply.say("plain"), Reply.say("second"), Reply.say("third"))
    assert client.chat(role="judge", messages=MSGS).text == "plain"
    assert client.chat(role="judge", messages=MSGS, repeat=1).text == "second"
    assert client.chat(role="judge", messages=MSGS, repeat=2).text == "third"
    assert model_server.request_count == 3
    # the repeat number is a cache key only: the endpoint saw three identical requests
    bodies = [r.body for r in model_server.chat_requests]
    assert bodies[0] == bodies[1] == bodies[2] and "repeat" not in bodies[1]
    # again, each from its own entry; repeat=0 is the call without a repeat
    again = [client.chat(role="judge", messages=MSGS, repeat=r) for r in (0, 1, 2)]
    assert [a.text for a in again] == ["plain", "second", "third"] and all(a.cached for a in again)
    assert model_server.request_count == 3

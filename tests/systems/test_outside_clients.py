"""An outside library's own HTTP client waits as long as the harness does (issue 29, found recording
the peers' cassette on the embedded model): Graphiti's `openai` client gave up on message 156 after
its default 600 s while the call still waited for the embedded model's one slot behind Graphiti's
own parallel calls; the relay then counted 15 chat requests against 14 metered calls."""

from __future__ import annotations

import dataclasses
import threading
import time

import openai
import pytest

from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
from pytest_beam.llm.meter import Meter
from pytest_beam.llm.relay import LIBRARY_CLIENT_OPTIONS, ModelRelay
from tests.model_server import Reply


def _three_at_once(client: openai.OpenAI) -> list[str]:
    """Three calls at once, as Graphiti makes them; each one's outcome (its text or its error's class)."""
    out: list[str] = [""] * 3

    def call(i: int) -> None:
        try:
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"call {i}"}])
            out[i] = reply.choices[0].message.content or ""
        except openai.APIError as exc:
            out[i] = type(exc).__name__

    threads = [threading.Thread(target=call, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


@pytest.mark.parametrize("options, timed_out", [({"timeout": 1.0, "max_retries": 0}, True),
                                                (LIBRARY_CLIENT_OPTIONS, False)], ids=["own-timeout", "harness"])
def test_a_library_call_queued_behind_others_is_not_given_up(model_server, options, timed_out):
    # one slot (the embedded model's concurrency), 0.6 s per call: the third call waits 1.2 s for it
    model_server.latency = 0.6
    model_server.script(*[Reply.say("ok") for _ in range(3)])
    client = ModelClient(EndpointConfig(base_url=model_server.base_url, concurrency=1, max_retries=0, timeout_s=10.0),
                         RoleModels(agent="scripted"), meter=Meter())
    relay = ModelRelay(client, lambda system, texts: [[1.0, 0.0, 0.0] for _ in texts], dimensions=3).start()
    try:
        library = openai.OpenAI(base_url=relay.base_url("graphiti", "extraction"), api_key="unused")
        got = _three_at_once(library.with_options(**options))
        deadline = time.monotonic() + 10  # an abandoned call still finishes in the harness
        while client.meter.snapshot()["graphiti extraction"].calls < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        relay.close()
        client.close()
    if timed_out:  # the defect: a call the harness still sends and meters, abandoned by the library
        assert "APITimeoutError" in got
    else:
        assert got == ["ok", "ok", "ok"]
    assert model_server.request_count == 3 and client.meter.snapshot()["graphiti extraction"].calls == 3


def test_mem0_s_clients_wait_as_long_as_the_harness_and_never_retry(make_context, models):
    pytest.importorskip("mem0", reason="the mem0 extra")
    from pytest_beam.systems.mem0_system import Mem0System

    relay = ModelRelay(models, lambda system, texts: [[1.0, 0.0, 0.0] for _ in texts], dimensions=3).start()
    try:
        context = dataclasses.replace(make_context(), relay=lambda: relay, system_name="mem0")
        memory = Mem0System(context)._build()
        for client in (memory.llm.client, memory.embedding_model.client):
            assert client.timeout is None and client.max_retries == 0
            assert str(client.base_url).startswith(relay.base_url("mem0", "extraction"))
    finally:
        relay.close()


def test_graphiti_tries_an_unusable_reply_four_times_without_waiting_between(model_server):
    """Graphiti's client waited 5 to 120 s (tenacity, random exponential) before each try of a reply
    that is not JSON: about a minute per such message, for a reply no wait changes (the harness's
    transport already waits out the endpoint's 429s and 5xx). The tries stay four; the waits go."""
    pytest.importorskip("graphiti_core", reason="the graphiti extra")
    import asyncio
    import json

    import tenacity
    from graphiti_core.llm_client.config import LLMConfig
    from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
    from graphiti_core.prompts.models import Message

    from pytest_beam.systems.graphiti_system import GRAPHITI_TRIES, _without_waits

    relayed = _without_waits(OpenAIGenericClient)
    policy = relayed._generate_response_with_retry.retry
    assert isinstance(policy.wait, tenacity.wait_none) and policy.stop.max_attempt_number == GRAPHITI_TRIES == 4
    assert isinstance(OpenAIGenericClient._generate_response_with_retry.retry.wait,
                      tenacity.wait_random_exponential)  # Graphiti's own, untouched
    model_server.script(*[Reply.say('{"edges": [{"fact": "cut', finish_reason="length")] * 4)
    client = relayed(LLMConfig(api_key="k", model="m", small_model="m", base_url=model_server.base_url))
    client.client = client.client.with_options(**LIBRARY_CLIENT_OPTIONS)
    with pytest.raises(json.JSONDecodeError):
        asyncio.run(client._generate_response_with_retry([Message(role="user", content="facts?")]))
    assert model_server.request_count == 4

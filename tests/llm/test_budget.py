"""Spend caps: refused before the request is sent, also across processes."""

from __future__ import annotations

import multiprocessing

import pytest

from pytest_beam.llm import (
    Budget,
    BudgetExceeded,
    Cassette,
    EndpointConfig,
    FileBudget,
    ModelClient,
    ResponseCache,
    RoleModels,
)
from tests.model_server import Reply

MSGS = [{"role": "user", "content": "question"}]


def test_calls_cap_refuses_before_sending(model_server, make_client):
    model_server.default_reply = "ok"
    budget = Budget(max_calls=2)
    client = make_client(model_server, budget=budget)
    client.chat(role="agent", messages=MSGS)
    client.chat(role="judge", messages=MSGS)
    with pytest.raises(BudgetExceeded) as info:
        client.chat(role="judge", messages=MSGS)
    assert model_server.request_count == 2
    err = info.value
    assert (err.cap, err.used, err.limit, err.flag, err.role) == ("calls", 2, 2, "--beam-max-calls", "judge")
    assert "2/2 model calls" in str(err) and "--beam-max-calls" in str(err)
    assert budget.exhausted and budget.used()["refused"] == 1
    assert client.meter.total().calls == 2


def test_tokens_cap_counts_reported_usage_and_the_prompt_estimate(model_server, make_client):
    budget = Budget(max_tokens=1000)
    client = make_client(model_server, budget=budget)
    model_server.script(Reply.say("a", usage={"prompt_tokens": 900, "completion_tokens": 50}))
    client.chat(role="extraction", messages=MSGS)
    assert budget.used()["tokens"] == 950
    long_prompt = [{"role": "user", "content": "x" * 400}]  # ~100 tokens estimated: over the cap
    with pytest.raises(BudgetExceeded, match=r"950/1000 tokens.*--beam-max-tokens") as info:
        client.chat(role="extraction", messages=long_prompt)
    assert info.value.cap == "tokens" and model_server.request_count == 1


def test_cache_hits_and_replays_are_free(model_server, make_client, tmp_path):
    model_server.default_reply = "ok"
    budget = Budget(max_calls=1)
    client = make_client(model_server, budget=budget, cache=ResponseCache(tmp_path / "cache"))
    client.chat(role="agent", messages=MSGS)
    client.chat(role="agent", messages=MSGS)  # cached: not refused
    with pytest.raises(BudgetExceeded):
        client.chat(role="agent", messages=[{"role": "user", "content": "new"}])
    assert budget.used()["calls"] == 1 and model_server.request_count == 1


def _spend(path: str, base_url: str, worker: int, results) -> None:
    client = ModelClient(EndpointConfig(base_url=base_url, backoff_base_s=0.001), RoleModels(agent="m"),
                         budget=FileBudget(path, max_calls=5))
    made = refused = 0
    for i in range(4):
        try:
            client.chat(role="agent", messages=[{"role": "user", "content": f"{worker}-{i}"}])
            made += 1
        except BudgetExceeded:
            refused += 1
    results.put((made, refused))


def test_file_budget_is_shared_by_two_processes(model_server, tmp_path):
    model_server.default_reply = "ok"
    path = str(tmp_path / "run" / "budget.json")
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=_spend, args=(path, model_server.base_url, w, results)) for w in (1, 2)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=20) for _ in procs]
    for p in procs:
        p.join(10)
    assert sum(m for m, _ in outcomes) == 5 and sum(r for _, r in outcomes) == 3
    assert model_server.request_count == 5
    shared = FileBudget(path, max_calls=5)
    assert shared.used()["calls"] == 5 and shared.used()["refused"] == 3 and shared.exhausted
    shared.reset()
    assert shared.used()["calls"] == 0


def test_budget_in_replay_only_mode_is_untouched(tmp_path, make_client):
    budget = Budget(max_calls=0)
    client = make_client(None, budget=budget, cassette=Cassette(tmp_path / "none.jsonl", "none"))
    with pytest.raises(Exception) as info:
        client.chat(role="agent", messages=MSGS)
    assert type(info.value).__name__ == "CassetteMiss"
    assert budget.used()["refused"] == 0


def test_a_response_the_disk_refuses_is_counted_never_raised(small_disk):
    """Issue 43: a full disk under the response cache failed the paid call whose reply it could not keep."""
    from pytest_beam.llm.cache import ResponseCache

    disk = small_disk("1m")
    cache = ResponseCache(disk.path / "cache")
    disk.fill()
    cache.put("ab" * 32, b"{" + b" " * 20000 + b"}")
    assert cache.lost == 1 and cache.error is not None and cache.error.errno == 28
    assert cache.get("ab" * 32) is None

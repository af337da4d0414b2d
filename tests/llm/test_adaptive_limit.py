"""The endpoint's limit follows what it takes (issue 41 point 2): halved once per burst of 429s or
timeouts, up by one per round of successes, never above the ceiling, never below one."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_beam.llm import endpoint_limit
from pytest_beam.llm.adaptive_limit import AdaptiveLimit, limits
from tests.model_server import Reply


def settle(limit: AdaptiveLimit, *outcomes: str) -> None:
    """Requests one after another, each ending as given."""
    for outcome in outcomes:
        with limit.slot() as slot:
            slot.outcome = outcome  # type: ignore[assignment]


def test_a_throttled_reply_halves_the_limit_and_successes_win_it_back_one_round_at_a_time():
    limit = AdaptiveLimit("http://h/v1", ceiling=8)
    assert limit.limit == 8
    settle(limit, "throttled")
    assert limit.limit == 4
    settle(limit, "timeout")
    assert limit.limit == 2
    settle(limit, "ok")
    assert limit.limit == 2  # one success is half a round at 2 in flight
    settle(limit, "ok")
    assert limit.limit == 3
    settle(limit, *["ok"] * 3)
    assert limit.limit == 4
    settle(limit, *["ok"] * 100)
    assert limit.limit == 8  # the ceiling, never above
    state = limit.state()
    assert (state.ceiling, state.limit, state.lowest, state.throttled, state.timeouts, state.decreases) == (
        8, 8, 2, 1, 1, 2)


def test_it_never_goes_below_one_and_an_error_says_nothing_of_load():
    limit = AdaptiveLimit("http://h/v1", ceiling=2)
    settle(limit, "throttled", "throttled", "throttled")
    assert limit.limit == 1 and limit.state().throttled == 3
    settle(limit, "error", "error")
    assert limit.limit == 1  # neither up nor down
    with pytest.raises(RuntimeError), limit.slot():
        raise RuntimeError("the caller failed")  # the slot is given back, counted as an error
    settle(limit, "ok")
    assert limit.limit == 2


def test_a_burst_of_429s_to_requests_sent_at_one_limit_halves_it_once():
    limit = AdaptiveLimit("http://h/v1", ceiling=8)
    slots = [limit.slot() for _ in range(8)]
    held = [s.__enter__() for s in slots]  # eight in flight at the limit of 8
    for slot, cm in zip(held, slots):
        slot.outcome = "throttled"
        cm.__exit__(None, None, None)
    assert limit.limit == 4 and limit.state().decreases == 1 and limit.state().throttled == 8


def test_no_more_than_the_limit_are_in_flight_and_waiters_go_when_it_grows():
    limit = AdaptiveLimit("http://h/v1", ceiling=3)
    settle(limit, "throttled")  # limit 1
    in_flight = 0
    most = 0
    lock = threading.Lock()

    def request(_: int) -> None:
        nonlocal in_flight, most
        with limit.slot() as slot:
            with lock:
                in_flight += 1
                most = max(most, in_flight)
            threading.Event().wait(0.01)
            with lock:
                in_flight -= 1
            slot.outcome = "ok"

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(request, range(30)))
    assert most <= 3 and limit.limit == 3  # grown back to the ceiling while they ran


def test_the_client_backs_off_after_429s_and_reports_the_limit(model_server_factory, make_client):
    server = model_server_factory(default_reply="ok")
    server.script(Reply.fail(429, retry_after=0), Reply.fail(429, retry_after=0))
    client = make_client(server, endpoint={"concurrency": 6})
    reply = client.chat(role="agent", messages=[{"role": "user", "content": "q"}])
    assert reply.text == "ok"
    state = endpoint_limit(client.endpoint.endpoint_key, 6).state()
    # 6 -> 3 -> 1, then the success is a whole round at 1 in flight: 2
    assert (state.ceiling, state.throttled, state.lowest, state.limit) == (6, 2, 1, 2)
    assert state in limits()

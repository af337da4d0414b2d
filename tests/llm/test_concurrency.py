"""The per-endpoint concurrency limit, shared by the clients of a base URL and limit in the process."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from pytest_beam.llm import endpoint_limit


class Rendezvous:
    """Holds each chat request until `size` of them are held together, then answers them all:
    requests overlap by construction, not because the server happened to be slow enough."""

    def __init__(self, size: int) -> None:
        self.barrier = threading.Barrier(size, timeout=60)  # a bound for a broken run, not a wait

    def __call__(self, body: dict) -> str:
        self.barrier.wait()
        return "ok"


def test_at_most_limit_requests_in_flight(model_server_factory, make_client):
    server = model_server_factory(default_reply="ok", responder=Rendezvous(2))
    chat_client = make_client(server, endpoint={"concurrency": 2})
    other_client = make_client(server, endpoint={"concurrency": 2})  # same URL: same semaphore

    def work(i: int) -> object:
        if i % 3 == 2:
            return other_client.embed([f"text {i}"], model="emb")
        return chat_client.chat(role="agent", messages=[{"role": "user", "content": f"q{i}"}])

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(work, range(6)))
    assert len(results) == 6 and server.request_count == 6
    assert server.max_in_flight == 2


def test_semaphore_is_keyed_by_normalised_base_url_and_limit():
    a = endpoint_limit("http://h:1/v1/", 3)
    assert endpoint_limit("http://h:1/v1", 3) is a
    assert endpoint_limit("http://h:2/v1", 3) is not a
    assert endpoint_limit("http://h:1/v1", 9) is not a


def test_a_later_client_with_a_higher_limit_gets_it(model_server_factory, make_client):
    # The overhead bench ingests at concurrency 1 and then 8 against one server: the second
    # client must not inherit the first one's limit.
    server = model_server_factory(default_reply="ok")
    make_client(server, endpoint={"concurrency": 1}).chat(role="agent", messages=[{"role": "user", "content": "q"}])
    server.responder = Rendezvous(4)  # four at once, or the barrier never opens
    wide = make_client(server, endpoint={"concurrency": 4})
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda i: wide.chat(role="agent", messages=[{"role": "user", "content": f"w{i}"}]), range(4)))
    assert server.max_in_flight == 4

"""The per-endpoint concurrency limit, shared by every client of a base URL in the process."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pytest_beam.llm import endpoint_semaphore


def test_at_most_limit_requests_in_flight(model_server_factory, make_client):
    server = model_server_factory(default_reply="ok", latency=0.12)
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


def test_semaphore_is_keyed_by_normalised_base_url():
    a = endpoint_semaphore("http://h:1/v1/", 3)
    assert endpoint_semaphore("http://h:1/v1", 9) is a
    assert endpoint_semaphore("http://h:2/v1", 3) is not a

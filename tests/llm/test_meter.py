"""Usage arithmetic and the Meter's snapshot / merge / since (the xdist transport)."""

from __future__ import annotations

import json
import threading

from pytest_beam.llm import Meter, Usage, snapshot_from_dict, snapshot_to_dict


def test_usage_adds_and_subtracts():
    a = Usage(calls=1, prompt_tokens=10, completion_tokens=2, latency_s=0.5, cached_calls=1)
    b = Usage(calls=2, prompt_tokens=5, completion_tokens=1, latency_s=0.25, retries=1)
    assert a + b == Usage(calls=3, prompt_tokens=15, completion_tokens=3, latency_s=0.75, cached_calls=1, retries=1)
    assert (a + b) - b == a and sum([a, b]) == a + b
    assert (a + b).total_tokens == 18
    assert Usage.from_dict({**a.to_dict(), "unknown_future_field": 3}) == a


def test_meter_round_trips_merges_and_diffs():
    worker1, worker2 = Meter(), Meter()
    worker1.record("agent", Usage(calls=1, prompt_tokens=100, completion_tokens=10, latency_s=1.0))
    worker2.record("agent", Usage(calls=2, prompt_tokens=50, completion_tokens=5, latency_s=0.5))
    worker2.record("judge", Usage(calls=1, prompt_tokens=7, completion_tokens=1))
    wire = [json.loads(json.dumps(m.to_dict())) for m in (worker1, worker2)]  # plain JSON between processes
    controller = Meter()
    for data in wire:
        controller.merge(data)
    snap = controller.snapshot()
    assert snap["agent"] == Usage(calls=3, prompt_tokens=150, completion_tokens=15, latency_s=1.5)
    assert snap["judge"].calls == 1
    assert Meter.from_dict(controller.to_dict()).snapshot() == snap
    assert snapshot_from_dict(snapshot_to_dict(snap)) == snap

    before = controller.snapshot()
    controller.record("judge", Usage(calls=1, prompt_tokens=3))
    assert controller.since(before) == {"judge": Usage(calls=1, prompt_tokens=3)}
    before["judge"].calls = 99  # snapshots are copies
    assert controller.snapshot()["judge"].calls == 2


def test_meter_is_thread_safe():
    meter = Meter()

    def work() -> None:
        for _ in range(2000):
            meter.record("agent", Usage(calls=1, prompt_tokens=1))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert meter.snapshot()["agent"].calls == 8000 and meter.total().prompt_tokens == 8000

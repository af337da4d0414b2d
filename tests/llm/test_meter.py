"""Usage arithmetic and the Meter's snapshot / merge / since (the xdist transport)."""

from __future__ import annotations

import json
import threading
from dataclasses import fields

from pytest_beam.llm import Meter, Usage, snapshot_from_dict, snapshot_to_dict
from pytest_beam.llm.meter import UsageCounts


def test_usage_adds_and_subtracts():
    a = Usage(calls=1, prompt_tokens=10, completion_tokens=2, latency_s=0.5, cached_calls=1)
    b = Usage(calls=2, prompt_tokens=5, completion_tokens=1, latency_s=0.25, retries=1)
    assert a + b == Usage(calls=3, prompt_tokens=15, completion_tokens=3, latency_s=0.75, cached_calls=1, retries=1)
    assert (a + b) - b == a and sum([a, b]) == a + b
    assert (a + b).total_tokens == 18
    assert Usage.from_dict({**a.to_dict(), "unknown_future_field": 3}) == a


def test_usage_counts_names_every_field_of_usage_in_order():
    """Usage.to_dict() is typed as UsageCounts (a cast): the two must not drift apart."""
    assert list(UsageCounts.__annotations__) == [f.name for f in fields(Usage)]
    assert list(Usage(calls=1).to_dict()) == list(UsageCounts.__annotations__)


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


# ---- the journal: what the endpoint was sent, whatever happens to the process -----------------

KILLED_CLIENT = """
import sys, threading
from pytest_beam.llm import EndpointConfig, Meter, ModelClient, RoleModels, UsageJournal
client = ModelClient(EndpointConfig(base_url=sys.argv[1], max_retries=3, backoff_base_s=0.001, backoff_max_s=0.01),
                     RoleModels(agent="m"), meter=Meter(journal=UsageJournal(sys.argv[2])))
client.chat(role="agent", messages=[{"role": "user", "content": "answered"}])
client.chat(role="agent", messages=[{"role": "user", "content": "held"}])  # killed while this one is out
"""


def test_a_killed_process_leaves_every_request_it_sent_in_its_journal(model_server, tmp_path):
    """Issue 32 item 5: a worker killed with kill -9 took its usage with it. The journal is
    written as each request goes out and as each call ends, so what the endpoint was sent is
    all there: a call answered, and one whose reply never came (its retry included)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from pytest_beam.llm import read_journals
    from tests.model_server import Reply

    gate = threading.Event()
    held = []

    def respond(body):
        if "held" in json.dumps(body):
            held.append(1)
            if len(held) == 1:
                return Reply.fail(503, "busy")  # one retry before the request that hangs
            gate.wait(60)
            return Reply.disconnect()
        return "fine"

    model_server.responder = respond
    journal = tmp_path / "gw0.usage.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, model_server.base_url, str(journal)])
    try:
        deadline = time.monotonic() + 60
        while len(held) < 2:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        gate.set()
    usage = read_journals([journal])["agent"]
    assert model_server.request_count == 3 == usage.requests
    assert (usage.calls, usage.retries, usage.abandoned, usage.errors) == (1, 1, 1, 0)
    assert usage.prompt_tokens > 0  # the answered call's tokens


def test_a_journal_cut_mid_line_is_read_up_to_the_cut(tmp_path):
    from pytest_beam.llm import UsageJournal, read_journals

    path = tmp_path / "main.usage.jsonl"
    meter = Meter(journal=UsageJournal(path))
    call = meter.new_call()
    meter.sent("judge", call, 1)
    meter.record("judge", Usage(calls=1, prompt_tokens=7), call=call)
    meter.journal.close()
    with path.open("a") as fh:
        fh.write('{"call": 2, "role": "judge", "usa')  # a process killed while writing
    assert read_journals([path]) == {"judge": Usage(calls=1, prompt_tokens=7)}

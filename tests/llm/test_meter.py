"""Usage arithmetic and the Meter's snapshot / merge / since, and the one usage model from the meter to the record."""

from __future__ import annotations

import json
import threading

from pytest_beam.llm import Meter, Usage


def test_usage_adds_and_subtracts():
    a = Usage(calls=1, prompt_tokens=10, completion_tokens=2, seconds=0.5, cached_calls=1)
    b = Usage(calls=2, prompt_tokens=5, completion_tokens=1, seconds=0.25, retries=1)
    assert a + b == Usage(calls=3, prompt_tokens=15, completion_tokens=3, seconds=0.75, cached_calls=1, retries=1)
    assert (a + b) - b == a and sum([a, b]) == a + b
    assert (a + b).tokens == 18 and (a + b).all_calls == 4 and (a + b).requests == 4
    assert Usage.model_validate({**a.model_dump(), "unknown_future_field": 3}) == a


def test_a_usage_row_reads_as_the_record_writes_it_and_as_older_journals_wrote_it():
    """One model from the meter to the record: the record's rows are Usage's JSON; a row written
    with the meter's old name for its seconds (latency_s) reads the same."""
    row = Usage(calls=2, prompt_tokens=30, completion_tokens=4, seconds=0.25, usage_missing=1)
    assert list(row.model_dump()) == ["calls", "cached_calls", "prompt_tokens", "completion_tokens", "seconds",
                                      "replayed_calls", "cached_tokens", "retries", "errors", "abandoned",
                                      "usage_missing"]
    assert Usage.model_validate_json(row.model_dump_json()) == row
    old = {"calls": 2, "prompt_tokens": 30, "completion_tokens": 4, "latency_s": 0.25, "usage_missing": 1}
    assert Usage.model_validate(old) == row


def test_meter_merges_and_diffs():
    worker1, worker2 = Meter(), Meter()
    worker1.record("agent", Usage(calls=1, prompt_tokens=100, completion_tokens=10, seconds=1.0))
    worker2.record("agent", Usage(calls=2, prompt_tokens=50, completion_tokens=5, seconds=0.5))
    worker2.record("judge", Usage(calls=1, prompt_tokens=7, completion_tokens=1))
    controller = Meter()
    for worker in (worker1, worker2):
        controller.merge({role: Usage.model_validate(json.loads(u.model_dump_json()))
                          for role, u in worker.snapshot().items()})  # as JSON between processes
    snap = controller.snapshot()
    assert snap["agent"] == Usage(calls=3, prompt_tokens=150, completion_tokens=15, seconds=1.5)
    assert snap["judge"].calls == 1

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

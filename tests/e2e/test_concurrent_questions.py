"""A conversation's questions answered several at once (issue 41 point 1), end to end.

The long-context baseline answers conversation 1 of the full set (20 questions) from the scripted
model: it ingests without a model call and answers with one, so every call of the run is a
question's, and the run needs no Neo4j. Against one question at a time (--beam-question-concurrency=1)
the concurrent run gives the same records, usage, cassette and cache; its answers do overlap at
the endpoint (four held together, or the run errors); -x and Ctrl-C start nothing more and keep
what finished. The spend cap stops graphrag's lite run at the same count either way
(tests/e2e/test_caps.py), and graphrag's concurrent answers are held to the records pinned before
concurrency by the replay tests (tests/e2e/test_replay.py, test_replay_peers.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.gated_runs import AS_FROM_A_TERMINAL, GatedModel, held, let_go, requests, the_record_appears, usage
from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.model_server import Reply, ScriptedModelServer

pytestmark = [pytest.mark.e2e]
WIDTH = 4


def answering(body: dict) -> bool:
    """A baseline's answering call (systems/answering.py's instructions), not a judge's."""
    return "You are answering a question about an earlier conversation" in json.dumps(body)


class TogetherFirst(ScriptedBeamModel):
    """The first WIDTH answering calls are answered only once all WIDTH are in flight together:
    questions that do not overlap fail the run (the barrier breaks, the calls get a 500)."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = threading.Barrier(WIDTH, timeout=60)
        self.lock = threading.Lock()
        self.seen = 0

    def __call__(self, body):
        if answering(body):
            with self.lock:
                self.seen += 1
                first = self.seen <= WIDTH
            if first:
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    return Reply.fail(500, "the answers did not overlap")
        return super().__call__(body)


def beam(project: Path, server: ScriptedModelServer, beam_data_dir: Path, width: int, *args: str,
         launcher: list[str] | None = None, popen: bool = False):
    (project / "pytest.ini").write_text("[pytest]\nbeam_mode = full\n")
    cmd = [*(launcher or [sys.executable, "-m", "pytest"]), "-p", "no:randomly", "-p", "no:cacheprovider",
           "--beam-mode=full", "--beam-conversations=1", "--beam-system=long-context", f"--beam-data={beam_data_dir}",
           f"--beam-base-url={server.base_url}", "--beam-model=scripted", "--beam-snapshot=off",
           f"--beam-question-concurrency={width}", f"--beam-concurrency={WIDTH}", "--beam-max-retries=0",
           f"--beam-results={project / 'results'}", "--beam-pass-score=0", *args]
    if popen:
        return subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ), start_new_session=True)
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=600, env=dict(os.environ))


def record_of(project: Path) -> dict:
    (path,) = (project / "results").glob("*/record.json")
    return json.loads(path.read_text())


def by_question(record: dict) -> dict[str, tuple]:
    return {q["id"]: (q["answer"], q["score"], [i["score"] for i in q["items"]], q["flags"], q["outcome"],
                      {role: (u["calls"], u["prompt_tokens"], u["completion_tokens"])
                       for role, u in q["usage"].items()})
            for q in record["questions"]}


def cassette(path: Path) -> tuple[dict, dict[tuple[str, int], dict]]:
    """A cassette's header and its responses by request fingerprint and repeat, each body without the
    id the scripted server numbers its replies with (the order they were made in)."""
    header, *lines = (json.loads(line) for line in path.read_text().splitlines())
    entries = {}
    for entry in lines:
        body = json.loads(entry.pop("body"))
        body.pop("id", None)
        entries[(entry["fp"], entry["i"])] = {**entry, "body": body}
    return header, entries


def totals(record: dict) -> dict[str, tuple[int, int, int]]:
    return {role: (u["calls"], u["prompt_tokens"], u["completion_tokens"]) for role, u in record["usage"].items()}


def test_concurrent_questions_give_the_sequential_records_usage_cassette_and_cache(tmp_path, beam_data_dir):
    runs = {}
    with ScriptedModelServer(responder=ScriptedBeamModel()) as server:  # one endpoint: the cache keys name it
        for width in (1, WIDTH):
            project = tmp_path / f"width-{width}"
            project.mkdir()
            server.reset()
            server.responder = TogetherFirst() if width > 1 else ScriptedBeamModel()
            done = beam(project, server, beam_data_dir, width, "--beam-record-mode=all",
                        f"--beam-cassette={project / 'run.jsonl'}", f"--beam-cache={project / 'cache'}",
                        "--beam-max-calls=100000", "--beam-max-tokens=100000000")
            runs[width] = (project, server.max_in_flight)
            assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    (one, one_in_flight), (many, many_in_flight) = runs[1], runs[WIDTH]
    assert one_in_flight == 1 and many_in_flight >= WIDTH  # the answers overlapped at the endpoint
    sequential, concurrent = record_of(one), record_of(many)
    assert len(sequential["questions"]) == 20
    assert by_question(concurrent) == by_question(sequential)  # answers, scores, flags and each one's usage
    assert totals(concurrent) == totals(sequential)
    assert sequential["usage"]["agent"]["calls"] == 20
    header, entries = cassette(one / "run.jsonl")
    assert (header, entries) == cassette(many / "run.jsonl")  # the same requests, the same responses
    cached = sorted(p.relative_to(one / "cache").as_posix() for p in (one / "cache").rglob("*") if p.is_file())
    assert cached and cached == sorted(p.relative_to(many / "cache").as_posix()
                                       for p in (many / "cache").rglob("*") if p.is_file())

    # the concurrent run's cassette replays, concurrently, to the same records with no model
    replay = many / "replay"
    replay.mkdir()
    with ScriptedModelServer(responder=lambda body: Reply.fail(500, "no model in a replay")) as nobody:
        done = beam(replay, nobody, beam_data_dir, WIDTH, "--beam-record-mode=none",
                    f"--beam-cassette={many / 'run.jsonl'}", "--beam-cache=off")
        assert nobody.request_count == 0
    assert done.returncode == 0, done.stdout[-4000:]
    replayed = record_of(replay)
    same = {q: v[:5] for q, v in by_question(sequential).items()}  # usage aside: replayed, not live
    assert {q: v[:5] for q, v in by_question(replayed).items()} == same


class FirstThenHeld(ScriptedBeamModel):
    """The first item's question is answered; every other answering call waits at a gate the test opens."""

    def __init__(self, first: str) -> None:
        super().__init__()
        self.first = first
        self.lock = threading.Lock()
        self.answering = 0
        self.held = 0
        self.changed = threading.Condition(self.lock)
        self.gate = threading.Event()

    def __call__(self, body):
        if answering(body):
            first = body["messages"][-1]["content"] == self.first
            with self.lock:
                self.answering += 1
                if not first:
                    self.held += 1
                    self.changed.notify_all()
            if not first:
                self.gate.wait(600)
                return Reply.disconnect()
        return super().__call__(body)


def test_x_stops_the_questions_not_started_and_keeps_the_one_that_finished(tmp_path, beam_data_dir):
    from pytest_beam.data.sets import load_set

    first = load_set("full", beam_data_dir, "1").questions[0]  # the run's first item
    model = FirstThenHeld(first.question)
    with ScriptedModelServer(responder=model) as server:
        with held(beam(tmp_path, server, beam_data_dir, WIDTH, "-x", "--beam-pass-score=1", "--beam-cache=off",
                       "--beam-max-calls=100000", "--beam-max-tokens=100000000", popen=True), model) as proc:
            with model.changed:
                assert model.changed.wait_for(lambda: model.held >= WIDTH - 1, timeout=300), "the pool never filled"
            the_record_appears(tmp_path, proc)  # -x ended the run while the others were still in flight
            out, _ = proc.communicate(timeout=300)
        sent = server.request_count
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, out[-3000:]
    # the first and the three beside it; the thread that answered the first takes the next question
    # while its item fails, and that one's call goes out only if it beats the stop: never more than
    # WIDTH at once, nothing after, and every request sent is in the record
    assert model.answering in (WIDTH, WIDTH + 1)
    record = record_of(tmp_path)
    finished = [q for q in record["questions"] if q["outcome"] == "failed"]
    assert [q["id"] for q in finished] == [first.id] and finished[0]["score"] == 0.0  # kept, scored
    assert usage(record, "abandoned") == model.held and requests(record) == sent


def test_ctrl_c_while_questions_are_in_flight_keeps_every_request_sent(tmp_path, beam_data_dir):
    model = GatedModel(paid=0)  # long-context ingests with no call: every held call is a question's
    with ScriptedModelServer(responder=model) as server:
        with held(beam(tmp_path, server, beam_data_dir, WIDTH, "--beam-cache=off", "--beam-max-calls=100000",
                       "--beam-max-tokens=100000000", popen=True,
                       launcher=[sys.executable, "-c", AS_FROM_A_TERMINAL]), model) as proc:
            model.wait_for(lambda: model.waiting >= WIDTH, "four questions wait at the gate together")
            time.sleep(0.5)  # nothing more arrives: the pool is full
            assert model.waiting == WIDTH
            os.killpg(proc.pid, signal.SIGINT)
            the_record_appears(tmp_path, proc)
            out = let_go(proc, model, timeout=300)
        sent = server.request_count
    record = record_of(tmp_path)
    assert record["partial"] is True and record["partial_reason"].startswith("interrupted"), out[-3000:]
    assert usage(record, "abandoned") == WIDTH == sent and requests(record) == sent


class Throttling(ScriptedBeamModel):
    """Answers 429 (retry at once) to the first few calls: an endpoint saying it is overloaded."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals
        self.lock = threading.Lock()

    def __call__(self, body):
        with self.lock:
            refuse = self.refusals > 0
            self.refusals -= 1
        return Reply.fail(429, "slow down", retry_after=0) if refuse else super().__call__(body)


def test_the_summary_says_where_the_limit_settled_and_how_many_429s(tmp_path, beam_data_dir):
    """Issue 41 point 2: after 429s the limit drops and grows back; the record and the summary say
    where it settled and count the 429s."""
    with ScriptedModelServer(responder=Throttling(3)) as server:
        done = beam(tmp_path, server, beam_data_dir, WIDTH, "--beam-cache=off", "--beam-max-retries=5",
                    "--beam-max-calls=100000", "--beam-max-tokens=100000000", "-k", "abstention")
        endpoint = server.base_url.rstrip("/")
    assert done.returncode == 0, done.stdout[-4000:]
    (row,) = record_of(tmp_path)["endpoint_limits"]
    assert row["endpoint"] == endpoint and row["ceiling"] == WIDTH
    assert row["throttled"] == 3 and row["timeouts"] == 0 and row["lowest"] < WIDTH
    assert set(row["settled"]) == {"main"} and 1 <= row["settled"]["main"] <= WIDTH
    assert (f"requests in flight to {row['endpoint']}: settled at {row['settled']['main']} of a ceiling of {WIDTH} "
            f"(--beam-concurrency; lowest {row['lowest']}); 3 replies 429 or 503, 0 timeouts") in done.stdout

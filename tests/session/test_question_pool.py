"""The pool that answers a conversation's questions ahead (issue 41 point 1): in order, at most
its width at once, each result (or error, or skip) to its own question, nothing started once stopped."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_beam.data.records import ProbingQuestion
from pytest_beam.session.question_pool import QuestionPool


def question(n: int) -> ProbingQuestion:
    return ProbingQuestion(conversation_id="1", ability="abstention", index=n, question=f"q{n}?", rubric=("r",),
                           source_message_ids=())


class Answers:
    """Answers after a short wait, noting how many run at once and in what order they started."""

    def __init__(self, hold: float = 0.05) -> None:
        self.hold = hold
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[str] = []

    def __call__(self, q: ProbingQuestion, keep) -> str:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(q.id)
        time.sleep(self.hold)
        with self.lock:
            self.running -= 1
        if q.index == 3:
            raise RuntimeError(f"{q.id}: the endpoint is down")
        if q.index == 4:
            pytest.skip("spend cap reached: 40/40 calls")
        if q.index == 5:
            keep(f"unjudged {q.id}")
            raise RuntimeError("the judge failed")
        return f"record of {q.id}"


def test_questions_are_answered_in_order_at_most_width_at_once_each_with_its_own_result():
    answers = Answers()
    pool = QuestionPool(answers, width=3, name="conv1")  # type: ignore[arg-type]
    questions = [question(n) for n in range(10)]
    pool.add(questions)
    assert pool.take(questions[0]).record == "record of conv1:abstention:0"
    taken = {q.index: pool.take(q) for q in questions[1:]}
    assert answers.most == 3 and answers.started == [q.id for q in questions]  # order kept, width never passed
    assert taken[1].record == "record of conv1:abstention:1" and taken[1].error is None
    assert isinstance(taken[3].error, RuntimeError) and taken[3].record is None
    assert isinstance(taken[4].error, pytest.skip.Exception)  # the item is skipped, as if it had answered inline
    assert taken[5].unjudged == "unjudged conv1:abstention:5" and str(taken[5].error) == "the judge failed"


def test_a_question_added_twice_is_answered_once_and_one_never_added_is_refused():
    answers = Answers(hold=0)
    pool = QuestionPool(answers, width=2, name="conv1")  # type: ignore[arg-type]
    pool.add([question(0), question(1)])
    pool.add([question(1), question(2)])  # the next item's view: 1 again, 2 new
    assert [pool.take(question(n)).record for n in range(3)] == [f"record of conv1:abstention:{n}" for n in range(3)]
    assert answers.started == ["conv1:abstention:0", "conv1:abstention:1", "conv1:abstention:2"]
    with pytest.raises(KeyError, match="never given"):
        pool.take(question(7))


def test_stop_starts_nothing_more_and_a_waiting_take_says_why():
    gate = threading.Event()

    def held(q, keep):
        gate.wait(10)
        return q.id

    pool = QuestionPool(held, width=1, name="conv1")  # type: ignore[arg-type]
    pool.add([question(0), question(1), question(2)])
    pool.stop()  # -x or Ctrl-C: question 0 is in flight, 1 and 2 never start
    gate.set()
    with pytest.raises(RuntimeError, match="stopped before it was answered"):
        pool.take(question(2))
    pool.add([question(3)])  # nothing is queued once stopped
    time.sleep(0.1)
    assert not pool.knows(question(3))


def test_in_one_process_the_upcoming_items_are_the_rest_of_the_session(pytester):
    pytester.makeconftest("""
        import pytest
        from pytest_beam.session.question_pool import upcoming
        @pytest.fixture
        def ahead(request):
            return [i.name for i in upcoming(request.session, request.node)]
    """)
    pytester.makepyfile("""
        def test_a(ahead):
            assert ahead == ["test_a", "test_b", "test_c"]
        def test_b(ahead):
            assert ahead == ["test_b", "test_c"]
        def test_c(ahead):
            assert ahead == ["test_c"]
    """)
    assert pytester.runpytest("-p", "no:randomly", "-p", "no:beam").ret == 0
    deselected = pytester.runpytest("-p", "no:randomly", "-p", "no:beam", "-k", "test_b or test_c")
    deselected.assert_outcomes(passed=2, deselected=1)  # test_a, never selected, is never ahead


def test_under_xdist_the_upcoming_items_are_the_ones_this_worker_was_sent(pytester, monkeypatch):
    """Each item sees itself, then only items its own worker runs after it (never another
    worker's), and at least the next one it runs: what xdist sent this worker and it has not run."""
    pytester.makeconftest("""
        import json, os, pytest
        from pytest_beam.session.question_pool import upcoming
        @pytest.fixture
        def ahead(request):
            names = [i.name for i in upcoming(request.session, request.node)]
            worker = os.environ["PYTEST_XDIST_WORKER"]
            with open(os.path.join(os.environ["AHEAD_OUT"], worker + ".jsonl"), "a") as fh:
                fh.write(json.dumps([request.node.name, names]) + "\\n")
    """)
    pytester.makepyfile("""
        import pytest
        @pytest.mark.parametrize("n", range(7))
        def test_one(ahead, n):
            pass
    """)
    out = pytester.path / "out"
    out.mkdir()
    monkeypatch.setenv("AHEAD_OUT", str(out))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:beam", "-n", "2")
    assert result.ret == 0, result.stdout.str()
    import json

    runs = {p.stem: [json.loads(line) for line in p.read_text().splitlines()] for p in out.glob("*.jsonl")}
    assert sum(len(r) for r in runs.values()) == 7 and len(runs) == 2
    for worker, ran in runs.items():
        order = [name for name, _ in ran]
        for position, (name, names) in enumerate(ran):
            assert names[0] == name, (worker, name, names)
            later = order[position:]
            assert names == [n for n in later if n in names], (worker, name, names, order)  # its own, in order
            if position + 1 < len(order):
                assert names[1] == order[position + 1], (worker, name, names, order)  # the next one at least

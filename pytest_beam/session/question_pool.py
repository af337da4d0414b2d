"""A conversation's questions answered ahead, several at once, once it is ingested.

With one question at a time a run waits on every model round trip in turn, while the endpoint
could serve many more. Once a system that may answer concurrently (`MemorySystem.answers_concurrently`)
has ingested a conversation, the questions its items will ask on this process are answered and
judged here, up to ``--beam-question-concurrency`` at once, in item order; each item then takes
its own result and reports it exactly as if it had answered inline (its error re-raised as its
error, a skip as its skip). Only what pytest will run here is answered: the items still queued
for this process (`upcoming`), so -k, -m and --lf choose as before, and a conversation an xdist
worker took over after a crash answers only the questions left to it.

Stopping (-x, Ctrl-C, the end of the conversation) drops the questions not started; the threads
are daemons, so a call still in flight is abandoned, never waited out (the meter's journal keeps
it as sent).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..results.question_record import QuestionRecord

Answer = Callable[["ProbingQuestion", Callable[["QuestionRecord"], None]], "QuestionRecord"]


@dataclass
class Answered:
    """What a worker thread made of one question: its record, or the error the item raises (after
    recording the unjudged answer, when judging failed after the answer was given)."""

    record: QuestionRecord | None = None
    unjudged: QuestionRecord | None = None
    error: BaseException | None = None


class QuestionPool:
    """Answers the questions it is given, in order, at most ``width`` at once."""

    def __init__(self, answer: Answer, width: int, name: str) -> None:
        self._answer, self.width, self.name = answer, width, name
        self._queue: deque[ProbingQuestion] = deque()
        self._known: set[str] = set()
        self._done: dict[str, Answered] = {}
        self._threads = 0
        self._stopped = False
        self._changed = threading.Condition()

    def add(self, questions: Iterable[ProbingQuestion]) -> None:
        """Queue the questions not yet given (in their order), with a thread for each up to the width."""
        with self._changed:
            if self._stopped:
                return
            for question in questions:
                if question.id not in self._known:
                    self._known.add(question.id)
                    self._queue.append(question)
            while self._threads < self.width and self._threads < len(self._queue):
                self._threads += 1
                threading.Thread(target=self._work, name=f"beam-{self.name}-{self._threads}", daemon=True).start()

    def knows(self, question: ProbingQuestion) -> bool:
        with self._changed:
            return question.id in self._known

    def take(self, question: ProbingQuestion) -> Answered:
        """Wait for the question's result (it must have been added); Ctrl-C interrupts the wait."""
        with self._changed:
            if question.id not in self._known:
                raise KeyError(f"{question.id} was never given to the {self.name} pool")
            self._changed.wait_for(lambda: question.id in self._done or self._stopped)
            done = self._done.pop(question.id, None)
        if done is None:
            raise RuntimeError(f"{question.id}: its conversation's questions were stopped before it was answered")
        return done

    def stop(self) -> None:
        """Start nothing more; what is in flight is left to finish or be abandoned with the process."""
        with self._changed:
            self._stopped = True
            self._queue.clear()
            self._changed.notify_all()

    def _work(self) -> None:
        while True:
            with self._changed:
                if self._stopped or not self._queue:
                    self._threads -= 1
                    return
                question = self._queue.popleft()
            done = Answered()

            def keep_unjudged(record: QuestionRecord, done: Answered = done) -> None:
                done.unjudged = record

            try:
                done.record = self._answer(question, keep_unjudged)
            except BaseException as exc:  # noqa: BLE001 - the item raises it, as if it had answered inline
                done.error = exc
            with self._changed:
                self._done[question.id] = done
                self._changed.notify_all()


def upcoming(pytest_session: pytest.Session, item: pytest.Item) -> list[pytest.Item]:
    """The items this process will run from ``item`` on, in order: under xdist the ones the
    controller has sent this worker and it has not yet started (xdist's own queue, read under its
    lock; a version whose queue cannot be read gives ``item`` alone, and the questions are then
    answered one at a time); in one process every item from ``item`` to the end."""
    items = pytest_session.items
    if not hasattr(pytest_session.config, "workerinput"):
        return items[items.index(item):] if item in items else [item]
    interactor = next((p for p in pytest_session.config.pluginmanager.get_plugins()
                       if type(p).__name__ == "WorkerInteractor" and hasattr(p, "torun")), None)
    if interactor is None:
        return [item]
    try:
        with interactor.torun.lock() as queued:
            indices = [i for i in (getattr(interactor, "nextitem_index", None), *queued) if isinstance(i, int)]
    except (AttributeError, TypeError):
        return [item]
    return [item, *(items[i] for i in indices if 0 <= i < len(items))]

"""One question's step: the system answers, the judge scores, and the question's record is built, once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..llm.meter import UsageScope
    from ..results.question_record import QuestionRecord
    from ..settings import Settings
    from ..system import SystemAnswer
    from .conversations import ConversationRun
    from .model_side import ModelSide


class QuestionStep:
    """Answers and scores the questions of this process, through its model side."""

    def __init__(self, settings: Settings, models: ModelSide) -> None:
        self.settings, self.models = settings, models

    def record_of(self, question: ProbingQuestion, conversation: ConversationRun,
                  unjudged_answer: Callable[[QuestionRecord], None],
                  upcoming: Callable[[], list[ProbingQuestion]]) -> QuestionRecord:
        """The question's record: answered here, or, for a system that answers concurrently, taken
        from its conversation's pool, which answers ``upcoming()`` (the questions this process will
        ask of the conversation from this one on, this one first) up to --beam-question-concurrency
        at once. Either way an error is raised here and an unjudged answer goes to ``unjudged_answer``."""
        width = self.settings.question_concurrency
        if width < 2 or not type(conversation.system).answers_concurrently:
            return self.answer_and_score(question, conversation, unjudged_answer)
        from .question_pool import QuestionPool

        if conversation.pool is None:
            conversation.pool = QuestionPool(
                lambda q, keep: self.answer_and_score(q, conversation, keep, beside_others=True),
                width, f"conv{conversation.conversation_id}")
        conversation.pool.add(upcoming())
        if not conversation.pool.knows(question):  # not queued for this process: answered here, beside the pool
            return self.answer_and_score(question, conversation, unjudged_answer, beside_others=True)
        done = conversation.pool.take(question)
        if done.unjudged is not None:
            unjudged_answer(done.unjudged)
        if done.error is not None:
            raise done.error
        assert done.record is not None
        return done.record

    def answer_and_score(self, question: ProbingQuestion, conversation: ConversationRun,
                         unjudged_answer: Callable[[QuestionRecord], None] | None = None, *,
                         beside_others: bool = False) -> QuestionRecord:
        """The question's record: the system's answer and the scorer's verdict on it. When judging
        fails after the answer was given, the record without a score goes to ``unjudged_answer``
        before the error propagates, so the run keeps it and ``pytest-beam rejudge`` can score it later.
        ``beside_others``: other questions are answered at the same time, each in a thread of its
        own, so this one's calls and trace events are counted and placed by its thread alone."""
        self.models.spend.check()
        with self.models.meter.scope(thread_only=beside_others) as used:
            return self._answer_and_score(question, conversation, unjudged_answer, beside_others, used)

    def _answer_and_score(self, question: ProbingQuestion, conversation: ConversationRun,
                          unjudged_answer: Callable[[QuestionRecord], None] | None, beside_others: bool,
                          used: UsageScope) -> QuestionRecord:
        models, trace, settings = self.models, self.models.trace, self.settings
        from ..results.question_record import question_record
        from ..scoring.scorer import score_answer

        seconds: dict[str, float] = {}
        system_name = conversation.system_name
        trace.set_context({"question": question.id, "phase": "agent", "system": system_name}, beside_others)
        answer: SystemAnswer | None = None
        judging: float | None = None  # when the judge phase started
        try:
            started = time.monotonic()
            answer = conversation.system.answer(question.for_system())
            seconds["agent"] = time.monotonic() - started
            trace({"kind": "agent_trace", "steps": answer.trace, "answer": answer.text, "flags": answer.flags})
            if not answer.gave_no_answer:  # no answer: nothing to judge, no call paid for it
                trace.set_context({"question": question.id, "phase": "judge", "system": system_name}, beside_others)
                judging = time.monotonic()
            judged = score_answer(question, answer.text, models.client, settings.scorer, settings.judge_runs,
                                  gave_no_answer=answer.gave_no_answer)
            if judging is not None:
                seconds["judge"] = time.monotonic() - judging
        except BaseException as exc:
            if answer is not None and unjudged_answer is not None:
                if judging is not None:
                    seconds["judge"] = time.monotonic() - judging
                unjudged_answer(question_record(question, system=system_name, answer=answer,
                                                usage=used.snapshot(), seconds=seconds,
                                                pass_score=settings.pass_score))
            if models.spend.reached(exc):
                pytest.skip(f"spend cap reached: {exc}")
            raise
        finally:
            trace.set_context({}, beside_others)
        return question_record(question, system=system_name, answer=answer, judged=judged,
                               usage=used.snapshot(), seconds=seconds, pass_score=settings.pass_score)

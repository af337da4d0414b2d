"""One question's step: the system answers, the judge scores, and the question's record is built, once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..results.question_record import QuestionRecord
    from ..settings import Settings
    from ..system import SystemAnswer
    from .conversations import ConversationRun
    from .model_side import ModelSide


class QuestionStep:
    """Answers and scores the questions of this process, through its model side."""

    def __init__(self, settings: Settings, models: ModelSide) -> None:
        self.settings, self.models = settings, models

    def answer_and_score(self, question: ProbingQuestion, conversation: ConversationRun,
                         unjudged_answer: Callable[[QuestionRecord], None] | None = None) -> QuestionRecord:
        """The question's record: the system's answer and the scorer's verdict on it. When judging
        fails after the answer was given, the record without a score goes to ``unjudged_answer``
        before the error propagates, so the run keeps it and ``pytest-beam rejudge`` can score it later."""
        models, trace, settings = self.models, self.models.trace, self.settings
        models.spend.check()
        from ..results.question_record import question_record
        from ..scoring.scorer import score_answer

        before = models.meter.snapshot()
        seconds: dict[str, float] = {}
        spans: dict[str, tuple[float, float]] = {}  # each phase's start and end on the epoch clock: its wall time
        system_name = conversation.system_name
        trace.context = {"question": question.id, "phase": "agent", "system": system_name}
        answer: SystemAnswer | None = None
        judging: float | None = None  # when the judge phase started
        judging_epoch = 0.0
        try:
            started, epoch = time.monotonic(), time.time()
            answer = conversation.system.answer(question.for_system())
            seconds["agent"] = time.monotonic() - started
            spans["agent"] = (epoch, epoch + seconds["agent"])
            trace({"kind": "agent_trace", "steps": answer.trace, "answer": answer.text, "flags": answer.flags})
            if not answer.gave_no_answer:  # no answer: nothing to judge, no call paid for it
                trace.context = {"question": question.id, "phase": "judge", "system": system_name}
                judging, judging_epoch = time.monotonic(), time.time()
            judged = score_answer(question, answer.text, models.client, settings.scorer, settings.judge_runs,
                                  gave_no_answer=answer.gave_no_answer)
            if judging is not None:
                seconds["judge"] = time.monotonic() - judging
                spans["judge"] = (judging_epoch, judging_epoch + seconds["judge"])
        except BaseException as exc:
            if answer is not None and unjudged_answer is not None:
                if judging is not None:
                    seconds["judge"] = time.monotonic() - judging
                    spans["judge"] = (judging_epoch, judging_epoch + seconds["judge"])
                unjudged_answer(question_record(question, system=system_name, answer=answer,
                                                usage=models.usage_since(before), seconds=seconds, spans=spans,
                                                pass_score=settings.pass_score))
            if models.spend.reached(exc):
                pytest.skip(f"spend cap reached: {exc}")
            raise
        finally:
            trace.context = {}
        return question_record(question, system=system_name, answer=answer, judged=judged,
                               usage=models.usage_since(before), seconds=seconds, spans=spans,
                               pass_score=settings.pass_score)

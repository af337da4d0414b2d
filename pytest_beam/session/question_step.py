"""One question's step: the system answers, the judge scores, and the `Outcome` carries both to the verdict."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..llm.meter import UsageByRole
    from ..scoring import QuestionScore
    from ..scoring.profile_names import ProfileName
    from ..settings import Settings
    from ..system import SystemAnswer
    from .conversations import ConversationRun
    from .model_side import ModelSide


# An answer with one of these flags is no answer (the agent hit its step limit or its timeout).
NO_ANSWER_FLAGS = frozenset({"agent_failure", "timeout"})


@dataclass
class Outcome:
    """Everything one question produced, before pytest decides pass or fail."""

    question: ProbingQuestion
    answer: SystemAnswer
    score: QuestionScore | None  # None: the answer was given but judging it failed
    usage: UsageByRole
    seconds: dict[str, float] = field(default_factory=dict)
    evidence_recall: float | None = None
    system: str | None = None  # the answering memory system's name


class QuestionStep:
    """Answers and scores the questions of this process, through its model side."""

    def __init__(self, settings: Settings, models: ModelSide) -> None:
        self.settings, self.models = settings, models

    def answer_and_score(self, question: ProbingQuestion, conversation: ConversationRun,
                         unjudged_answer: Callable[[Outcome], None] | None = None) -> Outcome:
        """The system's answer and its score. When judging fails after the answer was given, the
        answer is handed to ``unjudged_answer`` (an Outcome without a score) before the error
        propagates, so the record keeps it and ``pytest-beam rejudge`` can score it later."""
        models, trace = self.models, self.models.trace
        models.spend.check()
        from ..scoring import evidence_recall, score_question

        before = models.meter.snapshot()
        seconds: dict[str, float] = {}
        system_name = conversation.system_name
        trace.context = {"question": question.id, "phase": "agent", "system": system_name}
        answer: SystemAnswer | None = None
        judging: float | None = None  # when the judge phase started
        try:
            started = time.monotonic()
            answer = conversation.system.answer(question.for_system())
            seconds["agent"] = time.monotonic() - started
            trace({"kind": "agent_trace", "steps": answer.trace, "answer": answer.text, "flags": answer.flags})
            if NO_ANSWER_FLAGS & set(answer.flags):
                score = unjudged(question, self.settings.scorer)  # nothing to judge: no call paid for it
            else:
                trace.context = {"question": question.id, "phase": "judge", "system": system_name}
                judging = time.monotonic()
                score = score_question(question, answer.text, models.client, mode=self.settings.scorer,
                                       judge_runs=self.settings.judge_runs)
                seconds["judge"] = time.monotonic() - judging
        except BaseException as exc:
            if answer is not None and unjudged_answer is not None:
                if judging is not None:
                    seconds["judge"] = time.monotonic() - judging
                recall = evidence_recall(question.source_message_ids, answer.retrieved_message_ids)
                unjudged_answer(Outcome(question, answer, None, models.usage_since(before), seconds,
                                        recall, system_name))
            if models.spend.reached(exc):
                pytest.skip(f"spend cap reached: {exc}")
            raise
        finally:
            trace.context = {}
        usage = models.usage_since(before)
        recall = evidence_recall(question.source_message_ids, answer.retrieved_message_ids)
        return Outcome(question, answer, score, usage, seconds, recall, system_name)


def unjudged(question: ProbingQuestion, mode: ProfileName) -> QuestionScore:
    """The score of a question the agent did not answer (step limit, timeout): 0, no judge call."""
    from ..scoring import QuestionScore

    events = question.ability == "event_ordering"
    return QuestionScore(question_id=question.id, ability=question.ability, mode=mode, score=0.0, judge_calls=0,
                         event_f1=0.0 if events else None, event_tau_norm=0.0 if events else None)

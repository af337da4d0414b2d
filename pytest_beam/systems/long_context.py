"""`long-context`: the chat itself in the prompt, the baseline every memory system must beat.

When the chat does not fit the answering model's context (the `context_tokens` setting, 120,000
by default), the oldest messages go first: what is said last is most often what a question about
the current state needs, and a reader with a full window of recent chat is the fair baseline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, MemorySystem, SystemAnswer, SystemContext
from .answer_estimate import ContextCounter, estimate_answers, newest_first_costs
from .answering import (
    DEFAULT_CONTEXT_TOKENS,
    NO_MESSAGES,
    ChatMessage,
    answer_from_messages,
    build_prompt,
    chat_messages,
    prompt_tokens,
    setting,
)

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..settings import Settings
    from ..system import Estimate


class LongContextSystem(MemorySystem):
    """Answers from as much of the chat as fits the budget, newest messages kept."""

    name = "long-context"
    answers_concurrently: ClassVar[bool] = True  # the chat is only read once ingested

    def __init__(self, context: SystemContext, context_tokens: int | None = None) -> None:
        self.context = context
        self.budget = context_tokens or setting(context, "context_tokens", DEFAULT_CONTEXT_TOKENS)
        self.messages: list[ChatMessage] = []

    def ingest(self, documents: list[Document]) -> IngestReport:
        self.messages = chat_messages(documents)
        return IngestReport(chunks=len(documents),
                            notes=[f"{len(self.messages)} messages held for the prompt"])

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        newest_first = list(reversed(self.messages))
        return answer_from_messages(self.context.models, question, newest_first, system=self.name,
                                    budget=self.budget, details={"chat_messages": len(self.messages)})

    @classmethod
    def estimate(cls, bench_set: BenchmarkSet, questions: list[ProbingQuestion], settings: Settings) -> Estimate:
        """One answering call per question over the newest messages that fit the budget, counted exactly."""
        return estimate_answers(cls.name, bench_set, questions, settings, newest_that_fit)


def newest_that_fit(messages: list[ChatMessage], settings: Settings) -> ContextCounter:
    """The prompt's tokens for a question: the newest messages while they fit (fit_to_budget's rule,
    with the per-message counts summed once per conversation instead of recounted per question)."""
    from ..memory.tokens import count_tokens

    costs, budget = newest_first_costs(messages), settings.context_tokens

    def count(question: ProbingQuestion) -> int:
        empty = prompt_tokens(build_prompt([], question.question))
        total, taken = empty - count_tokens(NO_MESSAGES), 0
        for cost in costs:
            if total + cost > budget:
                break
            total, taken = total + cost, taken + 1
        return total if taken else empty

    return count

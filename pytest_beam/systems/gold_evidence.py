"""`gold-evidence` (MEASUREMENT AID, never a system to rank): the question's own sources in the prompt.

It answers from exactly the messages BEAM lists as the question's evidence (`source_chat_ids`,
`ProbingQuestion.source_message_ids`): what a perfect retriever would hand this reader. Its score
is a ceiling for retrieval-based systems under the same answer and judge models: the gap from
a system to it is what that system's retrieval loses; the gap from it to 1.0 is what the reader
and the judge lose. It reads what no real system may, so:

- it works only when the harness lends it `SystemContext.gold_evidence`, which the harness does
  for a class with `measurement_aid = True` and for no other;
- every answer carries the flag `measurement_aid`, and its trace says so.

An abstention question has no sources: the prompt then holds no message, and the right answer
is that the conversation does not say.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, ClassVar

from ..data.records import Document, ProbingQuestion, SystemQuestion
from ..system import IngestReport, MemorySystem, SystemAnswer, SystemContext
from .answer_estimate import ContextCounter, estimate_answers
from .answering import (
    DEFAULT_CONTEXT_TOKENS,
    ChatMessage,
    answer_from_messages,
    chat_messages,
    fit_to_budget,
    setting,
)

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from ..settings import Settings
    from ..system import Estimate

FLAG_MEASUREMENT_AID = "measurement_aid"


def gold_evidence_lookup(questions: Iterable[ProbingQuestion]) -> Callable[[str], tuple[int, ...]]:
    """For the harness: the id a system sees (``SystemQuestion.id``) -> source message ids."""
    sources = {q.system_id: tuple(q.source_message_ids) for q in questions}

    def lookup(question_id: str) -> tuple[int, ...]:
        if question_id not in sources:
            raise KeyError(f"gold-evidence: no sources known for question {question_id}")
        return sources[question_id]

    return lookup


class GoldEvidenceCeiling(MemorySystem):
    """MEASUREMENT AID: answers from the question's own source messages; a ceiling, not a rival."""

    name = "gold-evidence"
    measurement_aid: ClassVar[bool] = True
    answers_concurrently: ClassVar[bool] = True  # the messages are only read once ingested

    def __init__(self, context: SystemContext, context_tokens: int | None = None) -> None:
        if context.gold_evidence is None:
            raise RuntimeError(
                "gold-evidence is a measurement aid: it needs SystemContext.gold_evidence (question id -> "
                "source message ids), which the harness fills only for systems with measurement_aid = True")
        self.context = context
        self.sources = context.gold_evidence
        self.budget = context_tokens or setting(context, "context_tokens", DEFAULT_CONTEXT_TOKENS)
        self.by_id: dict[int, ChatMessage] = {}

    def ingest(self, documents: list[Document]) -> IngestReport:
        self.by_id = {m.id: m for m in chat_messages(documents)}
        return IngestReport(chunks=len(documents),
                            notes=["measurement aid: answers from each question's own source messages"])

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        wanted = sorted(set(self.sources(question.id)))
        present = [self.by_id[i] for i in wanted if i in self.by_id]
        missing = [i for i in wanted if i not in self.by_id]
        return answer_from_messages(
            self.context.models, question, present, system=self.name, budget=self.budget,
            flags=[FLAG_MEASUREMENT_AID],
            details={"measurement_aid": True, "source_ids": wanted, "sources_not_ingested": missing})

    @classmethod
    def estimate(cls, bench_set: BenchmarkSet, questions: list[ProbingQuestion], settings: Settings) -> Estimate:
        """One answering call per question over its own source messages, counted exactly."""
        return estimate_answers(cls.name, bench_set, questions, settings, sources_context,
                                measurement_aid=cls.measurement_aid)


def sources_context(messages: list[ChatMessage], settings: Settings) -> ContextCounter:
    """The prompt's tokens for a question: its source messages, fitted to the budget."""
    by_id = {m.id: m for m in messages}

    def count(question: ProbingQuestion) -> int:
        sources = [by_id[i] for i in sorted(set(question.source_message_ids)) if i in by_id]
        return fit_to_budget(sources, question.question, settings.context_tokens).context_tokens

    return count

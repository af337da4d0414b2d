"""`long-context`: the chat itself in the prompt, the baseline every memory system must beat.

When the chat does not fit the answering model's context (the `context_tokens` setting, 120,000
by default), the oldest messages go first: what is said last is most often what a question about
the current state needs, and a reader with a full window of recent chat is the fair baseline.
"""

from __future__ import annotations

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, MemorySystem, SystemAnswer, SystemContext
from .answering import DEFAULT_CONTEXT_TOKENS, ChatMessage, answer_from_messages, chat_messages, setting


class LongContextSystem(MemorySystem):
    """Answers from as much of the chat as fits the budget, newest messages kept."""

    name = "long-context"

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

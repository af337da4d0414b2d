"""`dense`: the k messages nearest the question under the built-in system's own embedder.

Same model (`make_embedder(settings.embeddings, models)`) and same message text as ingest
embeds for the graph (`memory.ingest.message_embedding_text`: a message's first words), so this
baseline isolates what the graph and the agent add over the vector search they start from.
Similarity is the dot product of unit vectors (cosine); ties go to the later message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, MemorySystem, SystemAnswer, SystemContext
from .answer_estimate import ContextCounter, estimate_answers, newest_first_costs
from .answering import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_TOP_K,
    ChatMessage,
    answer_from_messages,
    chat_messages,
    fit_to_budget,
    setting,
)

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..settings import Settings
    from ..system import Estimate


def rank_by_vector(query: list[float], vectors: Any, k: int) -> list[tuple[int, float]]:
    """(position, cosine) of the k rows of `vectors` nearest `query`, best first."""
    import numpy as np

    if len(vectors) == 0:
        return []
    scores = np.asarray(vectors, dtype=np.float32) @ np.asarray(query, dtype=np.float32)
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), -i))
    return [(i, float(scores[i])) for i in order[:k]]


class DenseSystem(MemorySystem):
    """Top-k messages by embedding similarity, fitted to the context budget."""

    name = "dense"
    answers_concurrently: ClassVar[bool] = True  # the vectors are only read once built

    def __init__(self, context: SystemContext, k: int | None = None, context_tokens: int | None = None,
                 embedder: Any = None) -> None:
        self.context = context
        self.k = k or setting(context, "retrieval_k", DEFAULT_TOP_K)
        self.budget = context_tokens or setting(context, "context_tokens", DEFAULT_CONTEXT_TOKENS)
        self._embedder = embedder
        self.messages: list[ChatMessage] = []
        self.vectors: Any = None

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from ..memory.embeddings import make_embedder

            spec = getattr(self.context.settings, "embeddings", None) or "local"
            self._embedder = make_embedder(spec, self.context.models)
        return self._embedder

    def ingest(self, documents: list[Document]) -> IngestReport:
        import numpy as np

        from ..memory.ingest import message_embedding_text

        self.messages = chat_messages(documents)
        texts = [message_embedding_text(m.text) for m in self.messages]
        vectors = self.embedder.embed(texts) if texts else []
        self.vectors = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1 if texts else 0)
        return IngestReport(chunks=len(documents),
                            notes=[f"{len(self.messages)} messages embedded with {self.embedder.name}"])

    def retrieve(self, query: str) -> list[tuple[ChatMessage, float]]:
        """The top-k messages for a query with their cosine, best first."""
        if self.vectors is None:
            raise RuntimeError("dense: answer before ingest")
        vector = self.embedder.embed([query])[0]
        return [(self.messages[i], s) for i, s in rank_by_vector(vector, self.vectors, self.k)]

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        hits = self.retrieve(question.question)
        return answer_from_messages(
            self.context.models, question, [m for m, _ in hits], system=self.name, budget=self.budget,
            details={"k": self.k, "embedder": self.embedder.name,
                     "ranking": [{"id": m.id, "score": round(s, 4)} for m, s in hits]})

    @classmethod
    def estimate(cls, bench_set: BenchmarkSet, questions: list[ProbingQuestion], settings: Settings) -> Estimate:
        """One answering call per question; ranking needs the embedder, so k messages of mean length are assumed."""
        return estimate_answers(cls.name, bench_set, questions, settings, mean_length_context,
                                note=f"; dense assumed to send {settings.retrieval_k} messages of mean length")


def mean_length_context(messages: list[ChatMessage], settings: Settings) -> ContextCounter:
    """The prompt's tokens for a question: k messages of the conversation's mean length, within the budget."""
    costs = newest_first_costs(messages)
    mean = sum(costs) / max(len(costs), 1)
    budget, k = settings.context_tokens, settings.retrieval_k

    def count(question: ProbingQuestion) -> int:
        base = fit_to_budget([], question.question, budget).context_tokens
        return min(budget, base + round(min(k, len(messages)) * mean))

    return count

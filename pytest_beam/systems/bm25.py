"""`bm25`: the k messages that score highest under BM25 for the question, in the prompt.

Keyword retrieval with a strong reader is a hard baseline on BEAM; it tells whether a memory
system's structure beats plain term matching. Ranking is the `bm25s` library's (Okapi BM25,
its default k1 and b) over each message's text, tokenised by `bm25s.tokenize` with its English
stop words and no stemming. Messages that share no term with the question score 0 and are
never sent: BM25 says nothing about them. Ties go to the later message (higher id).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, MemorySystem, SystemAnswer, SystemContext
from .answer_estimate import ContextCounter, estimate_answers
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


class BM25Index:
    """BM25 over a list of texts; `rank` gives (position, score) best first, zero scores left out."""

    def __init__(self, texts: list[str]) -> None:
        import bm25s  # lazy: `pytest --help` must not pay for it

        self._bm25s = bm25s
        self.size = len(texts)
        self.retriever = bm25s.BM25()
        if texts:
            self.retriever.index(self._tokens(texts, ids=True), show_progress=False)

    def _tokens(self, texts: list[str], ids: bool) -> Any:
        return self._bm25s.tokenize(texts, stopwords="en", show_progress=False, return_ids=ids)

    def scores(self, query: str) -> list[float]:
        if not self.size:
            return []
        terms = self._tokens([query], ids=False)[0]
        if not terms:
            return [0.0] * self.size
        return [float(s) for s in self.retriever.get_scores(terms)]

    def rank(self, query: str, k: int) -> list[tuple[int, float]]:
        scored = [(i, s) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda pair: (-pair[1], -pair[0]))
        return scored[:k]


class BM25System(MemorySystem):
    """Top-k messages by BM25, fitted to the context budget."""

    name = "bm25"
    answers_concurrently: ClassVar[bool] = True  # the index is only read once built

    def __init__(self, context: SystemContext, k: int | None = None, context_tokens: int | None = None) -> None:
        self.context = context
        self.k = k or setting(context, "retrieval_k", DEFAULT_TOP_K)
        self.budget = context_tokens or setting(context, "context_tokens", DEFAULT_CONTEXT_TOKENS)
        self.messages: list[ChatMessage] = []
        self.index: BM25Index | None = None

    def ingest(self, documents: list[Document]) -> IngestReport:
        self.messages = chat_messages(documents)
        self.index = BM25Index([m.text for m in self.messages])
        return IngestReport(chunks=len(documents),
                            notes=[f"BM25 index of {len(self.messages)} messages"])

    def retrieve(self, query: str) -> list[tuple[ChatMessage, float]]:
        """The top-k messages for a query with their scores, best first."""
        if self.index is None:
            raise RuntimeError("bm25: answer before ingest")
        return [(self.messages[i], s) for i, s in self.index.rank(query, self.k)]

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        hits = self.retrieve(question.question)
        return answer_from_messages(
            self.context.models, question, [m for m, _ in hits], system=self.name, budget=self.budget,
            details={"k": self.k, "ranking": [{"id": m.id, "score": round(s, 4)} for m, s in hits]})

    @classmethod
    def estimate(cls, bench_set: BenchmarkSet, questions: list[ProbingQuestion], settings: Settings) -> Estimate:
        """One answering call per question over its real BM25 ranking, counted exactly."""
        return estimate_answers(cls.name, bench_set, questions, settings, ranked_context)


def ranked_context(messages: list[ChatMessage], settings: Settings) -> ContextCounter:
    """The prompt's tokens for a question: its top k messages by BM25, fitted to the budget."""
    index = BM25Index([m.text for m in messages])

    def count(question: ProbingQuestion) -> int:
        ranked = [messages[i] for i, _ in index.rank(question.question, settings.retrieval_k)]
        return fit_to_budget(ranked, question.question, settings.context_tokens).context_tokens

    return count

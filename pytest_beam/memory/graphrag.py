"""The built-in memory system: Agentic GraphRAG on one Neo4j graph per conversation.

Ingest reads the documents into the graph (`ingest.py`); the agent answers from it with
read-only tools (`agent.py`). This class only wires the two to the harness's context.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, MemorySystem, SystemAnswer, SystemContext

if TYPE_CHECKING:
    from neo4j import Driver

    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..settings import Settings
    from ..system import Estimate
    from .embeddings import Embedder


@dataclass(frozen=True)
class _Graph:
    """The conversation's graph once connected: its driver, database and the embedder it was built for."""

    driver: Driver
    database: str
    embedder: Embedder


class GraphRAGSystem(MemorySystem):
    name = "agentic-graphrag-neo4j"
    # each answer is its own agent over the graph: the driver, the embedder and the client are thread-safe
    answers_concurrently: ClassVar[bool] = True

    def __init__(self, context: SystemContext) -> None:
        self.context = context
        self.settings = context.settings
        self._graph: _Graph | None = None

    def _connect(self) -> _Graph:
        if self._graph is None:
            from ..services.access import open_driver
            from .embeddings import make_embedder
            from .graph_schema import install_schema

            connection = self.context.start_neo4j()
            embedder = make_embedder(self.settings.embeddings, self.context.models, self.context.progress)
            self._graph = _Graph(open_driver(connection), connection.database, embedder)
            install_schema(self._graph.driver, self._graph.database, embedder.dimensions)
        return self._graph

    def ingest(self, documents: list[Document]) -> IngestReport:
        from .ingest import IngestConfig, ingest_documents

        graph = self._connect()
        config = IngestConfig(chunk_tokens=self.settings.chunk_tokens, max_llm_pairs=self.settings.max_llm_pairs,
                              concurrency=self.settings.concurrency)
        started = time.monotonic()
        meter = self.context.models.meter
        say = self.context.progress

        before = meter.total()
        last = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if say is None or (done not in (0, total) and now - last[0] < 2.0):
                return  # a line every two seconds at most, and always the first and last
            last[0] = now
            used = meter.total() - before
            say(f"conv{self.context.conversation_id} ingest: {done}/{total} chunks, {used.calls} calls "
                f"({used.cached_calls + used.replayed_calls} cached or replayed), "
                f"{used.prompt_tokens + used.completion_tokens:,} tokens, {now - started:.1f}s")

        return ingest_documents(graph.driver, graph.database, documents, self.context.models, graph.embedder, config,
                                progress=progress)

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        from .agent import AgentConfig, answer_question

        graph = self._connect()
        config = AgentConfig(tool_mode=self.settings.tool_mode, max_steps=self.settings.agent_steps,
                             timeout_s=self.settings.agent_timeout)
        # memory/search.py's own Embedder protocol still asks for a settable `dimensions`
        # (embeddings.Embedder reads it, as an endpoint learns it): one protocol once search.py is split
        return answer_question(graph.driver, graph.database, question, self.context.models,
                               graph.embedder, config)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._graph is not None:
            self._graph.driver.close()
            self._graph = None

    @classmethod
    def estimate(cls, bench_set: BenchmarkSet, questions: list[ProbingQuestion], settings: Settings) -> Estimate:
        """Its extraction, resolution and agent calls, counted from the real chunks and prompts
        (graphrag_estimate.py)."""
        from .graphrag_estimate import estimate_graphrag

        return estimate_graphrag(bench_set, questions, settings)

"""The built-in memory system: Agentic GraphRAG on one Neo4j graph per conversation.

Ingest reads the documents into the graph (`ingest.py`); the agent answers from it with
read-only tools (`agent.py`). This class only wires the two to the harness's context.
"""

from __future__ import annotations

import time

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, MemorySystem, SystemAnswer, SystemContext


class GraphRAGSystem(MemorySystem):
    name = "agentic-graphrag-neo4j"

    def __init__(self, context: SystemContext) -> None:
        self.context = context
        self.settings = context.settings
        self._driver = None
        self._database = None
        self._embedder = None

    def _connect(self):
        if self._driver is None:
            from ..services.access import open_driver
            from .embeddings import make_embedder
            from .graph_schema import install_schema

            connection = self.context.start_neo4j()
            self._embedder = make_embedder(self.settings.embeddings, self.context.models, self.context.progress)
            self._driver = open_driver(connection)
            self._database = connection.database
            install_schema(self._driver, self._database, self._embedder.dimensions)
        return self._driver

    def ingest(self, documents: list[Document]) -> IngestReport:
        from .ingest import IngestConfig, ingest_documents

        driver = self._connect()
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

        return ingest_documents(driver, self._database, documents, self.context.models, self._embedder, config,
                                progress=progress)

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        from .agent import AgentConfig, answer_question

        driver = self._connect()
        config = AgentConfig(tool_mode=self.settings.tool_mode, max_steps=self.settings.agent_steps,
                             timeout_s=self.settings.agent_timeout)
        return answer_question(driver, self._database, question, self.context.models, self._embedder, config)

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

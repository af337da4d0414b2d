"""`lightrag`: LightRAG (`lightrag-hku`, HKU's graph RAG) as the memory under test, in this process.

Install with `pip install 'pytest-beam[lightrag]'`. LightRAG keeps everything in files under the
conversation's folder (`lightrag/`: JSON key-value stores, NanoVectorDB vectors, a NetworkX graph),
removed when the conversation closes, and calls models through the harness's relay:

- its chat calls (`openai_complete_if_cache` with the relay's base URL) as role `extraction`, metered
  as `lightrag extraction`: entity and relation extraction per chunk at ingest (no gleaning pass:
  `entity_extract_max_gleaning=0`, one call per chunk) and summaries of merged descriptions when
  they grow long; at a question its keyword extraction (one call) before retrieval;
- its embeddings (`openai_embed`) from the relay's `/v1/embeddings` (the run's embedder);
- its tokenizer as tiktoken's cl100k_base (seeded from the project's copy: nothing downloaded).

Ingest inserts each BEAM session as one document, in order, headed by its session number and date
(LightRAG has no clock of its own) with each message tagged `[message <id>]`. Answers: LightRAG's
own retrieval, `aquery_data` in its default `mix` mode (keywords, then the knowledge graph's
entities and relations and the vector-matched chunks, with LightRAG's default top-k and token
budgets), and no reranker (none is configured offline); what it returns goes to the run's answering
model with the prompt every outside system shares (recalled.py). Each entity, relation and chunk
names the chunks it came from, and a chunk the messages its text overlaps: evidence recall.
"""

from __future__ import annotations

import logging
from typing import Any

from ..data.records import Document, SystemQuestion
from ..llm.wire import JsonObject
from ..system import IngestReport, SystemAnswer, SystemContext
from .outside import (
    CL100K_MODEL,
    LibraryCalls,
    OutsideSystem,
    Transcript,
    plain_transcripts,
    remove_tree,
    use_seeded_tiktoken,
)
from .recalled import Recalled, answer_from_recalled, relay_endpoint

ROLE = "extraction"
MAX_TOKENS = 2048  # per call of the library: the completion cap the relay holds it to
INSTALL_HINT = "pip install 'pytest-beam[lightrag]'"
LIBRARY_WAIT_S = 24 * 3600  # "no timeout of its own": the harness's timeout and retries bound each call
SEP = "<SEP>"  # LightRAG's separator of several source chunk ids in one field
MODE = "mix"  # LightRAG's default query mode: knowledge graph and vector chunks together


class LightRAGSystem(OutsideSystem):
    """LightRAG on files in the conversation's folder, its model calls through the harness's relay."""

    name = "lightrag"

    def __init__(self, context: SystemContext) -> None:
        self.context = context
        self.calls = LibraryCalls(context, self.system_name)
        self.rag: Any = None
        self.transcripts: list[Transcript] = []
        self.chunks: dict[str, tuple[int, ...]] = {}  # LightRAG chunk id -> BEAM message ids
        self.work = context.work_dir / "lightrag"

    def _build(self) -> Any:
        try:
            from lightrag import LightRAG
            from lightrag.llm.openai import openai_complete_if_cache, openai_embed
            from lightrag.utils import EmbeddingFunc
        except ImportError as exc:
            raise RuntimeError(f"--beam-system=lightrag needs the lightrag-hku package: {INSTALL_HINT} "
                               f"({exc})") from None
        for name in ("lightrag", "nano-vectordb"):
            logging.getLogger(name).setLevel(logging.WARNING)  # its INFO lines per chunk flood the run's output
        # a small model that repeats itself fills its context
        relay, url = relay_endpoint(self.context, self.system_name, ROLE, MAX_TOKENS)
        model = self.context.models.models.for_role(ROLE)
        use_seeded_tiktoken()

        async def complete(prompt: str, system_prompt: str | None = None,
                           history_messages: list[JsonObject] | None = None, **kwargs: Any) -> str:
            kwargs.pop("hashing_kv", None)
            reply: str = await openai_complete_if_cache(
                model, prompt, system_prompt=system_prompt, history_messages=history_messages or [],
                base_url=url, api_key="pytest-beam-relay", **kwargs)
            return reply

        async def embed(texts: list[str], **kwargs: Any) -> Any:
            return await openai_embed.func(texts, model=relay.embedding_model, base_url=url,
                                           api_key="pytest-beam-relay")

        self.work.mkdir(parents=True, exist_ok=True)
        return LightRAG(
            working_dir=str(self.work), workspace="", llm_model_func=complete, llm_model_name=model,
            embedding_func=EmbeddingFunc(embedding_dim=relay.dimensions, max_token_size=8192, func=embed,
                                         model_name=relay.embedding_model),
            entity_extract_max_gleaning=0, tiktoken_model_name=CL100K_MODEL,
            # LightRAG gives up on a call after 240 s by default, while the harness still waits for it (a
            # call queued behind others for the embedded model's one slot): the harness bounds each call
            default_llm_timeout=LIBRARY_WAIT_S, default_embedding_timeout=LIBRARY_WAIT_S,
            # its OpenAI client waits as long as the harness does (the relay always answers)
            llm_model_kwargs={"openai_client_configs": {"timeout": None}})

    def ingest(self, documents: list[Document]) -> IngestReport:
        self.rag = self._build()
        self.calls.run("storage start", self.rag.initialize_storages())
        self.transcripts = plain_transcripts(documents)
        for transcript in self.transcripts:  # one document per session, in order, each finished before the next
            doc_id = f"session-{transcript.session}"
            self.calls.run(f"insert (session {transcript.session})",
                           self.rag.ainsert(transcript.text, ids=[doc_id], file_paths=[doc_id]))
            status = self.calls.run("document status", self.rag.doc_status.get_by_id(doc_id)) or {}
            if status.get("status") != "processed":
                raise RuntimeError(f"lightrag could not ingest session {transcript.session}: "
                                   f"{status.get('status')} ({status.get('error_msg')})")
            chunk_ids = list(status.get("chunks_list") or [])
            rows = self.calls.run("chunks", self.rag.text_chunks.get_by_ids(chunk_ids)) if chunk_ids else []
            for chunk_id, row in zip(chunk_ids, rows):
                self.chunks[chunk_id] = transcript.messages_in(str((row or {}).get("content") or ""))
        graph = self.rag.chunk_entity_relation_graph
        nodes = self.calls.run("graph size", graph.get_all_nodes())
        edges = self.calls.run("graph size", graph.get_all_edges())
        empty = sum(1 for ids in self.chunks.values() if not ids)
        notes = [f"lightrag: {len(self.transcripts)} sessions as documents gave {len(self.chunks)} chunks, "
                 f"{len(nodes)} entities and {len(edges)} relations (files under the conversation's folder, "
                 "model calls through the relay)"]
        if empty:
            notes.append(f"lightrag: {empty} chunks could not be placed in their session's text")
        return IngestReport(chunks=len(self.chunks), entities_by_type={"Entity": len(nodes)},
                            relations_by_type={"RELATED": len(edges)}, notes=notes)

    def _ids(self, source_id: object) -> tuple[int, ...]:
        ids = {i for chunk in str(source_id or "").split(SEP) for i in self.chunks.get(chunk.strip(), ())}
        return tuple(sorted(ids))

    def _memory(self, text: str, ids: tuple[int, ...], ref: str) -> Recalled:
        first = min(ids) if ids else None
        where = next((t for t in self.transcripts if first in t.message_ids), None) if first is not None else None
        return Recalled(text=text, message_ids=ids, session=where.session if where else None,
                        date=where.date if where else None, ref=ref)

    def recall(self, query: str) -> list[Recalled]:
        if self.rag is None:
            raise RuntimeError("lightrag: answer before ingest")
        from lightrag import QueryParam

        found = self.calls.run("query", self.rag.aquery_data(query, QueryParam(mode=MODE, enable_rerank=False)))
        data = (found or {}).get("data") or {}
        out = []
        for e in data.get("entities") or []:
            out.append(self._memory(f"{e.get('entity_name')} ({e.get('entity_type')}): {e.get('description')}",
                                    self._ids(e.get("source_id")), f"entity:{e.get('entity_name')}"))
        for r in data.get("relationships") or []:
            out.append(self._memory(f"{r.get('src_id')} -> {r.get('tgt_id')}: {r.get('description')}",
                                    self._ids(r.get("source_id")), f"relation:{r.get('src_id')}|{r.get('tgt_id')}"))
        for c in data.get("chunks") or []:
            chunk_id = str(c.get("chunk_id") or "")
            out.append(self._memory(str(c.get("content") or ""), self.chunks.get(chunk_id, ()), f"chunk:{chunk_id}"))
        return out

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        recalled = self.recall(question.question)
        return answer_from_recalled(self.context.models, question, recalled, system=self.system_name,
                                    details={"mode": MODE, "search": "lightrag aquery_data, its defaults, no reranker"})

    def close(self) -> None:
        rag, self.rag = self.rag, None
        try:
            if rag is not None and self.calls.loop is not None:
                self.calls.loop.run_until_complete(rag.finalize_storages())
        finally:
            self.calls.close()
            remove_tree(self.work)

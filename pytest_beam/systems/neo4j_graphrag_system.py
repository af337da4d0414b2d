"""`neo4j-graphrag`: Neo4j's own GraphRAG package as the memory under test, on the conversation's Neo4j.

Install with `pip install 'pytest-beam[neo4j-graphrag]'`. It is the closest peer of the built-in
system: an LLM reads the chat into a knowledge graph on the same Neo4j, here with Neo4j's own
pipeline (`SimpleKGPipeline`) and retriever (`HybridCypherRetriever`) instead of ours:

- its LLM (`OpenAILLM`) and embedder (`OpenAIEmbeddings`) point at the harness's relay, so each call
  is metered as `neo4j-graphrag extraction`, capped, cached, recorded and replayed; their clients
  neither time out nor retry on their own, and 429s are not retried by its rate-limit handler (the
  relay's 429 is the run's spend cap, which no wait lifts);
- the pipeline's writer and entity resolution call APOC (`apoc.merge.relationship`,
  `apoc.refactor.mergeNodes`), which the package lists as a requirement: the conversation's Neo4j is
  started with those procedures only (services/procedures.py);
- the schema is fixed to the built-in system's node types, so the graphs differ by the pipeline,
  not by what is extracted, and the run skips the package's per-document schema-extraction call
  (with a 1.5B model its output often failed the package's own schema check and lost the document).

Ingest runs the pipeline once per BEAM session, in order, on the session's transcript (its number
and date in a header, each message tagged with its id): the package's fixed-size splitter (4,000
characters, 200 overlap), one extraction call per chunk under a JSON schema, chunk embeddings, the
graph written, entities of the same label and name merged. Answers: a vector index and a full-text
index on the chunks, then the hybrid retriever (top `retrieval_k` chunks) with a retrieval query
that adds each chunk's entities and the relations between them; those go to the run's answering
model with the prompt every outside system shares. A chunk names the messages its text overlaps.
"""

from __future__ import annotations

import logging
from typing import Any

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, SystemAnswer, SystemContext
from .answering import DEFAULT_TOP_K, setting
from .outside import LibraryCalls, OutsideSystem, Transcript, plain_transcripts
from .recalled import Recalled, answer_from_recalled, harness_relay, relay_endpoint

ROLE = "extraction"
MAX_TOKENS = 2048  # per call of the library: the completion cap the relay holds it to
INSTALL_HINT = "pip install 'pytest-beam[neo4j-graphrag]'"
# What the package's writer and resolver call (and nothing else of APOC is loaded)
PROCEDURES = ("apoc.create.addLabels", "apoc.merge.relationship", "apoc.refactor.mergeNodes")
# The built-in system's node types (memory/graph_schema.py), so both graphs hold the same kinds of things
NODE_TYPES = ("Person", "Place", "Organization", "Tool", "Topic", "Event", "Fact", "Instruction", "Preference",
              "Measure")
VECTOR_INDEX = "beam_chunk_vectors"
FULLTEXT_INDEX = "beam_chunk_text"
# The chunk, its session, its entities and the relations among them (not the lexical graph's own links)
RETRIEVAL_QUERY = """
OPTIONAL MATCH (node)-[:FROM_DOCUMENT]->(d:Document)
OPTIONAL MATCH (node)<-[:FROM_CHUNK]-(e:__Entity__)
OPTIONAL MATCH (e)-[r]->(o:__Entity__)
WITH node, score, d, collect(DISTINCT e.name) AS entities,
     collect(DISTINCT CASE WHEN r IS NULL THEN NULL ELSE e.name + ' ' + type(r) + ' ' + o.name END) AS facts
RETURN node.text AS text, node.index AS chunk, d.session AS session, score, entities, facts
"""


class Neo4jGraphRAGSystem(OutsideSystem):
    """neo4j-graphrag's SimpleKGPipeline and hybrid retriever on the conversation's Neo4j."""

    name = "neo4j-graphrag"

    def __init__(self, context: SystemContext, k: int | None = None) -> None:
        self.context = context
        self.k = k or setting(context, "retrieval_k", DEFAULT_TOP_K)
        self.calls = LibraryCalls(context, self.system_name)
        self.driver: Any = None
        self.retriever: Any = None
        self.transcripts: dict[str, Transcript] = {}

    def _clients(self) -> tuple[Any, Any]:
        try:
            from neo4j_graphrag.embeddings import OpenAIEmbeddings
            from neo4j_graphrag.llm import OpenAILLM
            from neo4j_graphrag.utils.rate_limit import NoOpRateLimitHandler
        except ImportError as exc:
            raise RuntimeError(f"--beam-system=neo4j-graphrag needs the neo4j-graphrag package: {INSTALL_HINT} "
                               f"({exc})") from None
        # a small model that repeats itself fills its context
        relay, url = relay_endpoint(self.context, self.system_name, ROLE, MAX_TOKENS)
        llm = OpenAILLM(model_name=self.context.models.models.for_role(ROLE), model_params={"temperature": 0.0},
                        rate_limit_handler=NoOpRateLimitHandler(), base_url=url, api_key="pytest-beam-relay",
                        timeout=None, max_retries=0)
        embedder = OpenAIEmbeddings(model=relay.embedding_model, base_url=url, api_key="pytest-beam-relay",
                                    timeout=None, max_retries=0)
        return llm, embedder

    def ingest(self, documents: list[Document]) -> IngestReport:
        import neo4j
        from neo4j_graphrag.experimental.pipeline.kg_builder import SimpleKGPipeline

        logging.getLogger("neo4j_graphrag").setLevel(logging.WARNING)
        llm, embedder = self._clients()
        connection = self.context.start_neo4j(procedures=PROCEDURES)
        self.driver = neo4j.GraphDatabase.driver(connection.uri, auth=connection.auth,
                                                 notifications_min_severity="OFF")
        pipeline = SimpleKGPipeline(llm=llm, driver=self.driver, embedder=embedder, from_file=False,
                                    schema=_schema(),
                                    on_error="IGNORE", perform_entity_resolution=True,
                                    neo4j_database=connection.database)
        for transcript in plain_transcripts(documents):
            session = str(transcript.session)
            self.transcripts[session] = transcript
            self.calls.run(f"pipeline (session {session})", pipeline.run_async(
                text=transcript.text, document_metadata={"session": session}))
        self._indexes(connection.database, embedder, relay_dimensions=harness_relay(self.context).dimensions)
        counts = self._count(connection.database)
        notes = [f"neo4j-graphrag: {len(self.transcripts)} sessions as documents gave {counts['chunks']} chunks, "
                 f"{counts['entities']} entities and {counts['relations']} relations (the conversation's Neo4j, "
                 "model calls through the relay)"]
        return IngestReport(chunks=counts["chunks"], entities_by_type={"Entity": counts["entities"]},
                            relations_by_type={"RELATED": counts["relations"]}, notes=notes)

    def _indexes(self, database: str, embedder: Any, *, relay_dimensions: int) -> None:
        from neo4j_graphrag.indexes import create_fulltext_index, create_vector_index
        from neo4j_graphrag.retrievers import HybridCypherRetriever

        create_vector_index(self.driver, VECTOR_INDEX, label="Chunk", embedding_property="embedding",
                            dimensions=relay_dimensions, similarity_fn="cosine", neo4j_database=database)
        create_fulltext_index(self.driver, FULLTEXT_INDEX, label="Chunk", node_properties=["text"],
                              neo4j_database=database)
        self.driver.execute_query("CALL db.awaitIndexes(300)", database_=database)
        self.retriever = HybridCypherRetriever(self.driver, VECTOR_INDEX, FULLTEXT_INDEX, RETRIEVAL_QUERY,
                                               embedder=embedder, result_formatter=_as_item,
                                               neo4j_database=database)

    def _count(self, database: str) -> dict[str, int]:
        records, _, _ = self.driver.execute_query(
            "CALL { MATCH (c:Chunk) RETURN count(c) AS chunks } "
            "CALL { MATCH (e:__Entity__) RETURN count(e) AS entities } "
            "CALL { MATCH (:__Entity__)-[r]->(:__Entity__) RETURN count(r) AS relations } "
            "RETURN chunks, entities, relations", database_=database)
        row = records[0]
        return {"chunks": int(row["chunks"]), "entities": int(row["entities"]), "relations": int(row["relations"])}

    def recall(self, query: str) -> list[Recalled]:
        if self.retriever is None:
            raise RuntimeError("neo4j-graphrag: answer before ingest")
        found = self.calls.run("search", lambda: self.retriever.search(query_text=query, top_k=self.k))
        out = []
        for item in found.items:
            record = item.metadata or {}
            text = str(record.get("text") or "")
            transcript = self.transcripts.get(str(record.get("session")))
            ids = transcript.messages_in(text) if transcript else ()
            facts = [f for f in record.get("facts") or [] if f]
            body = text + ("\nFacts: " + "; ".join(facts) if facts else "")
            out.append(Recalled(text=body, message_ids=ids, session=transcript.session if transcript else None,
                                date=transcript.date if transcript else None,
                                score=float(record["score"]) if record.get("score") is not None else None,
                                ref=f"session {record.get('session')} chunk {record.get('chunk')}"))
        return out

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        recalled = self.recall(question.question)
        return answer_from_recalled(self.context.models, question, recalled, system=self.system_name,
                                    details={"k": self.k, "search": "neo4j-graphrag HybridCypherRetriever"})

    def close(self) -> None:
        driver, self.driver = self.driver, None
        self.retriever = None
        try:
            if driver is not None:
                driver.close()
        finally:
            self.calls.close()  # the graph goes with the conversation's Neo4j, which the harness stops


def _schema() -> Any:
    """The fixed schema: the built-in system's node types, relations as the model names them."""
    from neo4j_graphrag.components.schema import GraphSchema

    return GraphSchema.model_validate({"node_types": list(NODE_TYPES), "additional_node_types": False})


def _as_item(record: Any) -> Any:
    """A retrieved record as the package's result item: the chunk's text, and its fields kept apart."""
    from neo4j_graphrag.types import RetrieverResultItem

    return RetrieverResultItem(content=str(record.get("text") or ""), metadata=dict(record.items()))

"""`graphiti`: Graphiti (`graphiti-core`, Zep's temporal knowledge graph) as the memory under test.

Install with `pip install 'pytest-beam[graphiti]'`. Graphiti runs in this process on the
conversation's own Neo4j (the harness's provider starts one per conversation and stops it), with:

- its OpenAI-compatible chat client (`OpenAIGenericClient`: plain `/chat/completions` with a JSON
  schema per prompt) pointed at the harness's model relay as role `extraction`, so every call it
  makes is metered as `graphiti extraction`, capped, cached and replayed from cassettes;
- its OpenAI embedder pointed at the relay's `/v1/embeddings` (the run's embedder; nothing is
  downloaded);
- no cross-encoder: Graphiti's default one asks OpenAI for log-probabilities, and its BGE one
  downloads a model. The adapter searches with Graphiti's default recipe (hybrid BM25 + cosine,
  reciprocal-rank fusion), which never reranks with a cross-encoder; the one it is given refuses
  loudly if any recipe ever calls it.

Ingest adds every BEAM message as one episode, sessions in order, at its session's date (the only
clock) plus one second per message in chat order (so episodes keep the chat's order and Graphiti's
"previous episodes" are always the same ones). Each episode's uuid maps to its message id, and
every fact (edge) Graphiti recalls names the episodes it came from: those are the answer's
retrieved message ids. Answers: Graphiti's `search` for the question (top `retrieval_k` facts),
then one call of the run's answering model over them (recalled.py). Graphiti's telemetry is off.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from typing import Any

from ..data.records import Document, SystemQuestion
from ..llm.relay import LIBRARY_CLIENT_OPTIONS
from ..system import IngestReport, SystemAnswer, SystemContext
from .answering import DEFAULT_TOP_K, setting
from .outside import OutsideSystem
from .recalled import Recalled, Turn, answer_from_recalled, harness_relay, relay_endpoint, turns

GROUP_ID = "beam"
ROLE = "extraction"  # the harness role Graphiti's own model calls are sent and capped as
GRAPHITI_TRIES = 4  # graphiti_core's LLMClient: tenacity, stop_after_attempt(4), for a reply that is not JSON
# (kept; the waits between them are not: _without_waits)
MAX_TOKENS = 2048  # per Graphiti call: its default (16k) is the embedded model's whole context
INSTALL_HINT = "pip install 'pytest-beam[graphiti]'"
UNDATED = dt.date(2000, 1, 1)  # only for a chat whose first sessions carry no date (BEAM's do)


def episode_times(chat: list[Turn]) -> tuple[list[dt.datetime], int]:
    """Each message's reference time: its session's date (else the last dated session's) plus one
    second per message in chat order; and how many messages had no date of their own."""
    times, last, undated = [], None, 0
    for i, turn in enumerate(chat):
        date = turn.date or last
        if turn.date is None:
            undated += 1
        last = date
        day = dt.datetime.combine(date or UNDATED, dt.time(), dt.UTC)
        times.append(day + dt.timedelta(seconds=i))
    return times, undated


def _unusable_reply(exc: BaseException) -> bool:
    """Graphiti gave up on what the model wrote, after its own tries: not JSON (a reply cut at the
    completion cap), not its schema, empty or a refusal. Nothing of that episode was written (Graphiti
    saves an episode's nodes and edges together, last)."""
    import json

    from graphiti_core.llm_client.errors import EmptyResponseError, RefusalError
    from pydantic import ValidationError

    return isinstance(exc, json.JSONDecodeError | ValidationError | EmptyResponseError | RefusalError)


def _refusing_cross_encoder() -> Any:
    from graphiti_core.cross_encoder.client import CrossEncoderClient

    class NoCrossEncoder(CrossEncoderClient):
        """pytest-beam's searches never rerank; a recipe that would is an error, not a silent skip."""

        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            raise RuntimeError("graphiti: this search recipe needs a cross-encoder, which pytest-beam does not "
                               "provide offline; use a recipe without one (the default hybrid RRF search)")

    return NoCrossEncoder()


def _without_waits(client_class: Any) -> Any:
    """Graphiti's client with its four tries and none of the 5 to 120 s waits between them.

    Those waits (tenacity's random exponential) are for a provider's rate limit, which the harness's
    transport has already waited out before Graphiti sees a failure: 429s as the endpoint asks, 5xx
    with --beam-max-retries. What is left for Graphiti to try again is a reply it could not parse,
    and waiting does not change the next one; it only stalled a run about a minute per such message.
    """
    import tenacity

    tries = client_class._generate_response_with_retry
    return type("RelayedGraphitiClient", (client_class,), {
        "__doc__": "Graphiti's own client, its tries sent at once (the harness waits for the endpoint).",
        "_generate_response_with_retry": tries.retry_with(wait=tenacity.wait_none()),
    })


class GraphitiSystem(OutsideSystem):
    """Graphiti on the conversation's Neo4j, its model calls through the harness's relay."""

    name = "graphiti"

    def __init__(self, context: SystemContext, k: int | None = None) -> None:
        if context.relay is None:
            raise RuntimeError("graphiti needs the harness's model relay (SystemContext.relay)")
        self.context = context
        self.k = k or setting(context, "retrieval_k", DEFAULT_TOP_K)
        self.graphiti: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.episodes: dict[str, Turn] = {}  # episode uuid -> its BEAM message

    def _run(self, what: str, coroutine: Any, *, unusable: list[str] | None = None) -> Any:
        """Run one Graphiti coroutine on this system's loop; a failure the relay kept (cap, cassette
        miss, endpoint) is raised as itself, any other as a RuntimeError naming the step. With
        ``unusable``, a step Graphiti gave up on because of what the model wrote returns None and
        the cause is appended there instead."""
        relay = harness_relay(self.context)
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        try:
            result = self.loop.run_until_complete(coroutine)
        except Exception as exc:
            relay.raise_failure(self.system_name, exc)
            if unusable is not None and _unusable_reply(exc):
                unusable.append(f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}")
                return None
            raise RuntimeError(f"graphiti {what} failed: {type(exc).__name__}: {exc}") from exc
        relay.raise_failure(self.system_name)  # Graphiti logged and went on: the harness does not
        return result

    def _build(self) -> Any:
        os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
        try:
            from graphiti_core import Graphiti
            from graphiti_core.driver.neo4j_driver import Neo4jDriver
            from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
            from graphiti_core.llm_client.config import LLMConfig
            from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
        except ImportError as exc:
            raise RuntimeError(f"--beam-system=graphiti needs the graphiti-core package: {INSTALL_HINT} "
                               f"({exc})") from None
        # its per-call maxima go up to 16,384
        relay, url = relay_endpoint(self.context, self.system_name, ROLE, MAX_TOKENS)
        model = self.context.models.models.for_role(ROLE)
        connection = self.context.start_neo4j()
        config = LLMConfig(api_key="pytest-beam-relay", model=model, small_model=model, base_url=url,
                           temperature=0.0, max_tokens=MAX_TOKENS)
        llm = _without_waits(OpenAIGenericClient)(config, max_tokens=MAX_TOKENS)
        llm.client = llm.client.with_options(**LIBRARY_CLIENT_OPTIONS)  # the harness times and retries
        embedder = OpenAIEmbedder(OpenAIEmbedderConfig(api_key="pytest-beam-relay", base_url=url,
                                                       embedding_model=relay.embedding_model,
                                                       embedding_dim=relay.dimensions))
        embedder.client = embedder.client.with_options(**LIBRARY_CLIENT_OPTIONS)

        # made outside a running loop, so the driver schedules nothing itself: the indexes are built below
        driver = Neo4jDriver(connection.uri, connection.user, connection.password, database=connection.database)
        # Graphiti's queries read properties a young graph lacks yet; the server's notice for each is
        # noise, not a fault: the same driver without notifications (nothing was connected yet)
        from neo4j import AsyncGraphDatabase

        unused, driver.client = driver.client, AsyncGraphDatabase.driver(
            connection.uri, auth=connection.auth, notifications_min_severity="OFF")
        self._run("driver swap", unused.close())
        graphiti = Graphiti(graph_driver=driver, llm_client=llm, embedder=embedder,
                            cross_encoder=_refusing_cross_encoder())
        self._run("index build", graphiti.build_indices_and_constraints())
        return graphiti

    def ingest(self, documents: list[Document]) -> IngestReport:
        from graphiti_core.nodes import EpisodeType

        self.graphiti = self._build()
        chat = turns(documents)
        times, undated = episode_times(chat)
        edges = nodes = 0
        lost: list[str] = []
        for turn, when in zip(chat, times):
            cause: list[str] = []
            result = self._run(f"add_episode (message {turn.id})", self.graphiti.add_episode(
                name=f"message {turn.id}", episode_body=f"{turn.role}: {turn.text}", source=EpisodeType.message,
                source_description=f"chat message, session {turn.session}", reference_time=when, group_id=GROUP_ID),
                unusable=cause)
            if result is None:  # as the built-in counts a chunk whose reply fails its schema: empty, and said
                lost.append(f"graphiti: message {turn.id} left out: the model's reply was unusable after "
                            f"Graphiti's {GRAPHITI_TRIES} tries ({cause[0]}); nothing of it is in the graph")
                continue
            self.episodes[result.episode.uuid] = turn
            edges += len(result.edges)
            nodes += len(result.nodes)
        notes = [f"graphiti: {len(chat)} messages as {len(chat) - len(lost)} episodes gave {nodes} entity mentions and "
                 f"{edges} facts (Neo4j of this conversation, model calls through the relay, no cross-encoder)"]
        if undated:
            notes.append(f"graphiti: {undated} messages had no session date and took the previous session's")
        notes.extend(lost)
        return IngestReport(chunks=len(chat), empty_extractions=len(lost), entities_by_type={"Entity": nodes},
                            relations_by_type={"RELATES_TO": edges}, notes=notes)

    def recall(self, query: str) -> list[Recalled]:
        if self.graphiti is None:
            raise RuntimeError("graphiti: answer before ingest")
        edges = self._run("search", self.graphiti.search(query, group_ids=[GROUP_ID], num_results=self.k))
        out = []
        for edge in edges:
            sources = [self.episodes[u] for u in edge.episodes or [] if u in self.episodes]
            first = min(sources, key=lambda t: (t.session, t.id)) if sources else None
            out.append(Recalled(text=str(edge.fact), message_ids=tuple(sorted(t.id for t in sources)),
                                session=first.session if first else None, date=first.date if first else None,
                                ref=str(edge.uuid)))
        return out

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        recalled = self.recall(question.question)
        return answer_from_recalled(self.context.models, question, recalled, system=self.system_name,
                                    details={"k": self.k, "search": "graphiti default (hybrid RRF, no cross-encoder)"})

    def close(self) -> None:
        graphiti, self.graphiti = self.graphiti, None
        loop, self.loop = self.loop, None
        try:
            if graphiti is not None and loop is not None:
                loop.run_until_complete(graphiti.close())
        finally:
            if loop is not None:
                loop.close()

"""`hindsight`: Hindsight (vectorize.io's agent memory, `hindsight-api-slim`) as the memory under test.

Install its environment with `pytest-beam install-system hindsight` (own_env.py: it fails under
openai 3, which pytest-beam runs on). It runs as a child process in that environment
(children/hindsight_child.py), on a PostgreSQL with pgvector that pg0 starts for the conversation
and stops with it (child_process.py; as root, as the user `nobody`), configured so that nothing
leaves the machine:

- its LLM is the `openai` provider at the harness's relay, role `extraction` (metered as `hindsight
  extraction`), with no retries or timeout of its own and no start-up verification call;
- its embeddings are the `openai` provider at the relay's `/v1/embeddings` (the run's embedder);
- its reranker is RRF (its default and FlashRank would download cross-encoders);
- its token counting is tiktoken's cl100k_base, seeded from the project's copy.

Ingest retains each BEAM session the way Hindsight's own LoCoMo benchmark does: the session's
messages as JSON (with their BEAM ids), a context line, the session's date as the event date, one
document per session, in order. Answers: Hindsight's `recall` as its benchmark runner calls it (the
high budget, 4,096 tokens, entities and chunks included); its facts go to the run's answering model
with the prompt every outside system shares. Each fact names the chunk it was extracted from, and a
chunk the messages its text overlaps: evidence recall.
"""

from __future__ import annotations

from typing import Any

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, SystemAnswer, SystemContext
from .child_process import ChildError, ChildProcess, Pg0Server, pg0_binary
from .children.protocol import Message
from .outside import OutsideSystem, Transcript, json_transcripts, messages_in_json, remove_tree, seed_tiktoken
from .recalled import Recalled, answer_from_recalled, harness_relay, relay_endpoint

ROLE = "extraction"
MAX_TOKENS = 2048  # per call of the library: the completion cap the relay holds it to
RECALL_TOKENS = 4096  # what Hindsight's benchmark runner asks recall for
NO_WAIT_S = 24 * 3600  # "no timeout of its own": the harness bounds each call


def in_chat_order(facts: list[Message]) -> list[Message]:
    """What Hindsight recalled, in the chat's order: by session (its document), date, then text.

    Hindsight's own order is not reproducible: facts it scores alike come back in another order from
    run to run (checked: three replays of one cassette, three orders past the fifth fact), so the
    answering prompt would never be the same request twice and no cassette could replay it. Which
    facts are recalled stays Hindsight's; only their order in the prompt is fixed."""
    def key(fact: Message) -> tuple[int, str, str]:
        document = str(fact.get("document_id") or "")
        session = int(document.rsplit("-", 1)[-1]) if document.rsplit("-", 1)[-1].isdigit() else 1 << 30
        when = str(fact.get("occurred_start") or fact.get("mentioned_at") or "")
        return session, when, str(fact.get("text") or "")

    return sorted(facts, key=key)


class HindsightSystem(OutsideSystem):
    """Hindsight's MemoryEngine in its own environment, on pg0's PostgreSQL, its calls through the relay."""

    name = "hindsight"

    def __init__(self, context: SystemContext) -> None:
        self.context = context
        self.work = context.work_dir / "hindsight"
        self.child: ChildProcess | None = None
        self.server: Pg0Server | None = None
        self.transcripts: dict[str, Transcript] = {}

    def _env(self) -> dict[str, str]:
        from ..paths import cache_root

        relay, url = relay_endpoint(self.context, self.system_name, ROLE, MAX_TOKENS)
        return {
            "HINDSIGHT_API_LLM_MAX_RETRIES": "0", "HINDSIGHT_API_LLM_TIMEOUT": str(NO_WAIT_S),
            "HINDSIGHT_API_SKIP_LLM_VERIFICATION": "true",
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai", "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": url,
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "pytest-beam-relay",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": relay.embedding_model,
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_DIMENSIONS": str(relay.dimensions),
            "HINDSIGHT_API_EMBEDDINGS_MAX_RETRIES": "0",
            "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
            "HINDSIGHT_API_TOKENIZER_ENCODING": "cl100k_base",
            "HINDSIGHT_API_OTEL_TRACES_ENABLED": "false",
            "TIKTOKEN_CACHE_DIR": str(seed_tiktoken(cache_root() / "tiktoken")),
        }

    def _call(self, what: str, op: str, lost: list[str] | None = None, **payload: Any) -> Any:
        """One request to the child; with `lost`, a step Hindsight gave up on because of what the model
        wrote returns None and its cause is appended there (the relay's own failures are raised as themselves)."""
        assert self.child is not None
        relay = harness_relay(self.context)
        try:
            result = self.child.request(op, **payload)
        except (ChildError, RuntimeError) as exc:
            relay.raise_failure(self.system_name, exc)
            if lost is not None and isinstance(exc, ChildError) and exc.kind == "unusable":
                lost.append(str(exc))
                return None
            raise RuntimeError(f"hindsight {what} failed: {exc}") from exc
        relay.raise_failure(self.system_name)
        return result

    def ingest(self, documents: list[Document]) -> IngestReport:
        relay = harness_relay(self.context)
        env = self._env()
        self.server = Pg0Server(pg0_binary("hindsight"), self.work / "pg0", label=self.context.conversation_id)
        db_url = self.server.start()
        self.child = ChildProcess(self.system_name, "hindsight", "hindsight_child", self.work / "hindsight.log", env)
        info = self._call("start", "start", config={
            "env": env, "db_url": db_url, "model": self.context.models.models.for_role(ROLE),
            "base_url": relay.base_url(self.system_name, ROLE)})
        memories, lost = 0, []
        for transcript in json_transcripts(documents):
            document = f"session-{transcript.session}"
            self.transcripts[document] = transcript
            cause: list[str] = []
            done = self._call(f"retain (session {transcript.session})", "retain", cause, content=transcript.text,
                              context=f"Chat between a user and an AI assistant: session {transcript.session}",
                              date=transcript.date.isoformat() if transcript.date else None, document_id=document)
            if done is None:
                lost.append(f"hindsight: session {transcript.session} left out: the model's replies were unusable "
                            f"({cause[0]}); Hindsight commits a session whole or not at all, nothing of it is stored")
                continue
            memories += int(done.get("memories") or 0)
        notes = [f"hindsight {info.get('version')}: {len(self.transcripts)} sessions retained as documents gave "
                 f"{memories} memory units (pg0 PostgreSQL for this conversation, model calls through the relay)",
                 *lost]
        return IngestReport(chunks=len(self.transcripts), empty_extractions=len(lost),
                            entities_by_type={"MemoryUnit": memories}, notes=notes)

    def recall(self, query: str) -> list[Recalled]:
        if self.child is None:
            raise RuntimeError("hindsight: answer before ingest")
        found = self._call("recall", "recall", query=query, max_tokens=RECALL_TOKENS)
        out = []
        for fact in in_chat_order(found.get("facts") or []):
            transcript = self.transcripts.get(str(fact.get("document_id")))
            ids: tuple[int, ...] = ()
            if transcript is not None:
                chunk = fact.get("chunk_text")
                ids = messages_in_json(transcript, chunk) if chunk else transcript.message_ids
            when = fact.get("occurred_start") or fact.get("mentioned_at")
            text = str(fact.get("text") or "") + (f" (when: {when})" if when else "")
            out.append(Recalled(text=text, message_ids=ids, session=transcript.session if transcript else None,
                                date=transcript.date if transcript else None, score=fact.get("score"),
                                ref=str(fact.get("id") or "")))
        return out

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        recalled = self.recall(question.question)
        return answer_from_recalled(self.context.models, question, recalled, system=self.system_name,
                                    details={"search": "hindsight recall (budget high, 4,096 tokens, chunks)"})

    def close(self) -> None:
        child, self.child = self.child, None
        server, self.server = self.server, None
        try:
            if child is not None:
                child.close()
        finally:
            try:
                if server is not None:
                    server.stop()
            finally:
                remove_tree(self.work)

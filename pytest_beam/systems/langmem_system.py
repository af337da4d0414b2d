"""`langmem`: LangMem (LangChain's long-term memory library) as the memory under test, in this process.

Install with `pip install 'pytest-beam[langmem]'`. LangMem's memory store manager
(`create_memory_store_manager`) runs with:

- a `ChatOpenAI` pointed at the harness's relay as role `extraction` (metered as `langmem
  extraction`): LangMem extracts and updates memories with tool calls (trustcall), searching the
  store for related memories first; its client neither times out nor retries on its own;
- `OpenAIEmbeddings` pointed at the relay's `/v1/embeddings` with `check_embedding_ctx_length=False`
  (by default it sends token ids, which the relay refuses, and counts them with a tiktoken vocabulary
  it would download);
- a LangGraph `InMemoryStore` per conversation, indexed with those embeddings: nothing is written to
  disk, and the store goes with the system when the conversation closes.

Ingest gives the manager the chat in order, one user message with the assistant's reply that
follows it per call (an unpaired message alone), each message's text headed by its session and the
session's date (LangMem has no clock of its own). Each memory it writes or updates is mapped to the
BEAM messages of the calls that touched it: the answer's retrieved message ids. A call that LangMem
gives up on because of what the model wrote (trustcall's validation loop runs out of steps, a reply
that is no tool call) is counted as one empty extraction and named in the record, and ingest goes
on. Answers: the manager's own search (`asearch`, top `retrieval_k`), then the run's answering model
over what it returned, with the prompt every outside system shares.
"""

from __future__ import annotations

import logging
import random
import uuid
from types import ModuleType
from typing import Any

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, SystemAnswer, SystemContext
from .answering import DEFAULT_TOP_K, setting
from .outside import LibraryCalls, OutsideSystem
from .recalled import Recalled, Turn, answer_from_recalled, relay_endpoint, turns, windows

ROLE = "extraction"
INSTALL_HINT = "pip install 'pytest-beam[langmem]'"
NAMESPACE = ("memories", "beam")
MAX_TOKENS = 2048  # per LangMem call: a small model that repeats itself would fill the whole context


def tagged(turn: Turn) -> str:
    when = turn.date.isoformat() if turn.date else "undated"
    return f"[session {turn.session}, {when}] {turn.text}"


class SeededUUID:
    """`uuid` as LangMem and trustcall see it while this system runs: `uuid4` from a generator seeded
    per conversation, everything else the real module. They put fresh uuid4s in their prompts (a
    `<session_...>` tag, each memory's instance id), so the same chat would never send the same
    request twice and no cassette could replay it; the ids name nothing outside the prompt."""

    def __init__(self, seed: str) -> None:
        self._random = random.Random(seed)

    def uuid4(self) -> uuid.UUID:
        return uuid.UUID(int=self._random.getrandbits(128), version=4)

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)


def _uuid_users() -> list[ModuleType]:
    import langmem.knowledge.extraction as extraction
    import trustcall._base as trustcall

    return [extraction, trustcall]


def memory_text(value: Any) -> str:
    """A stored memory's text: LangMem keeps `{"kind": ..., "content": <its schema>}`, the schema
    (`Memory` by default, a `content` string) as a dict or as the pydantic object itself."""
    content = value.get("content") if isinstance(value, dict) else value
    if isinstance(content, dict):
        return str(content.get("content", content))
    return str(getattr(content, "content", content))


def _unusable_reply(exc: BaseException) -> bool:
    """LangMem gave up on the model's reply: trustcall's repair loop ran out of steps, or what came
    back fails its schema or is no tool call at all."""
    from langgraph.errors import GraphRecursionError
    from pydantic import ValidationError

    return isinstance(exc, GraphRecursionError | ValidationError)


class LangMemSystem(OutsideSystem):
    """LangMem's memory store manager on an in-memory LangGraph store, its calls through the relay."""

    name = "langmem"

    def __init__(self, context: SystemContext, k: int | None = None) -> None:
        self.context = context
        self.k = k or setting(context, "retrieval_k", DEFAULT_TOP_K)
        self.calls = LibraryCalls(context, self.system_name)
        self.manager: Any = None
        self.patched = False  # uuid4 seeded in LangMem's and trustcall's modules (SeededUUID)
        self.sources: dict[str, tuple[int, ...]] = {}  # LangMem memory key -> BEAM message ids
        self.where: dict[str, Turn] = {}  # memory key -> the first message behind it

    def _build(self) -> Any:
        try:
            from langchain_openai import ChatOpenAI, OpenAIEmbeddings
            from langgraph.store.memory import InMemoryStore
            from langmem import create_memory_store_manager
            from pydantic import SecretStr
        except ImportError as exc:
            raise RuntimeError(f"--beam-system=langmem needs the langmem package: {INSTALL_HINT} ({exc})") from None
        relay, url = relay_endpoint(self.context, self.system_name, ROLE, MAX_TOKENS)
        model = ChatOpenAI(model=self.context.models.models.for_role(ROLE), base_url=url, api_key="pytest-beam-relay",
                           temperature=0.0, timeout=None, max_retries=0)
        embeddings = OpenAIEmbeddings(model=relay.embedding_model, openai_api_base=url,
                                      openai_api_key=SecretStr("pytest-beam-relay"), check_embedding_ctx_length=False,
                                      request_timeout=None, max_retries=0)
        store = InMemoryStore(index={"dims": relay.dimensions, "embed": embeddings})
        seeded = SeededUUID(f"pytest-beam {self.system_name} {self.context.conversation_id}")
        for module in _uuid_users():
            setattr(module, "uuid", seeded)  # noqa: B010 -- the library's own name for the module
        self.patched = True
        return create_memory_store_manager(model, namespace=NAMESPACE, store=store)

    def ingest(self, documents: list[Document]) -> IngestReport:
        logging.getLogger("langmem").setLevel(logging.WARNING)
        self.manager = self._build()
        chat = turns(documents)
        calls = windows(chat)
        lost: list[str] = []
        for window in calls:
            ids = tuple(t.id for t in window)
            messages = [{"role": t.role if t.role in ("user", "assistant") else "user", "content": tagged(t)}
                        for t in window]
            puts = self.calls.run_or_lose(f"memory update (messages {', '.join(map(str, ids))})",
                                          self.manager.ainvoke({"messages": messages}), _unusable_reply, lost)
            for put in puts or []:
                key = str(put.get("key"))
                self.sources[key] = tuple(sorted(set(self.sources.get(key, ())) | set(ids)))
                self.where.setdefault(key, window[0])
        notes = [f"langmem: {len(chat)} messages in {len(calls)} calls gave {len(self.sources)} memories "
                 "(LangGraph in-memory store, model calls through the relay)"]
        notes += [f"langmem: {cause}; left out, nothing of it stored" for cause in lost]
        return IngestReport(chunks=len(calls), empty_extractions=len(lost),
                            entities_by_type={"Memory": len(self.sources)}, notes=notes)

    def recall(self, query: str) -> list[Recalled]:
        if self.manager is None:
            raise RuntimeError("langmem: answer before ingest")
        found = self.calls.run("search", self.manager.asearch(query=query, limit=self.k))
        out = []
        for item in found or []:
            text = memory_text(getattr(item, "value", None))
            key = str(getattr(item, "key", ""))
            first = self.where.get(key)
            out.append(Recalled(text=text, message_ids=self.sources.get(key, ()),
                                session=first.session if first else None, date=first.date if first else None,
                                score=getattr(item, "score", None), ref=key))
        return out

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        recalled = self.recall(question.question)
        return answer_from_recalled(self.context.models, question, recalled, system=self.system_name,
                                    details={"k": self.k, "search": "langmem manager asearch"})

    def close(self) -> None:
        self.manager = None  # the in-memory store goes with it
        try:
            if self.patched:
                for module in _uuid_users():
                    setattr(module, "uuid", uuid)  # noqa: B010
                self.patched = False
        finally:
            self.calls.close()

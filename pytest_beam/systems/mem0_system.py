"""`mem0`: Mem0 (the open-source `mem0ai` library) as the memory under test, fully local.

Install with `pip install 'pytest-beam[mem0]'`. Mem0 runs in this process with:

- its `openai` LLM pointed at the harness's model relay as role `extraction` (so its extraction
  calls are metered as `mem0 extraction`, capped, cached and replayed from cassettes);
- its `openai` embedder pointed at the relay's `/v1/embeddings`, served by the run's embedder (the
  in-process MiniLM by default, 384 dimensions; nothing is downloaded);
- its Qdrant vector store in Qdrant's local mode (`qdrant-client` on disk in the conversation's
  work folder, no server), and its history database in the same folder.

Ingest adds the chat in order, one user turn with the assistant's reply per `add` call (an
unpaired message alone), each call carrying its BEAM message ids, session and date as metadata;
every memory Mem0 derives from the call keeps them, so a recalled memory names the messages it
came from. Mem0's open-source `add` takes no timestamp (a platform-only feature), and its
extraction prompt would otherwise tell the model today's date: the adapter gives that prompt the
session's date as both the observation date and the current date, so BEAM's session dates are the
only clock (and a cassette replays on any day). Answers: Mem0's `search` for the question (top
`retrieval_k`), then one call of the run's answering model over what it returned (recalled.py).

Mem0's telemetry and its notices (which fetch a remote file) are switched off: a benchmark run
sends nothing anywhere but to its own endpoint.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import os
from collections.abc import Iterator
from typing import Any

from ..data.records import Document, SystemQuestion
from ..llm.relay import LIBRARY_CLIENT_OPTIONS
from ..system import IngestReport, SystemAnswer, SystemContext
from .answering import DEFAULT_TOP_K, setting
from .outside import OutsideSystem
from .recalled import Recalled, answer_from_recalled, harness_relay, turns, windows

USER_ID = "beam-user"
ROLE = "extraction"  # the harness role Mem0's own model calls are sent and capped as
INSTALL_HINT = "pip install 'pytest-beam[mem0]'"
_SESSION_DATE: contextvars.ContextVar[str | None] = contextvars.ContextVar("pytest_beam_mem0_date", default=None)
_PATCHED = False


def _quiet_mem0() -> None:
    """Mem0 reads these when first imported: no telemetry, no remote notices, its files in our cache."""
    os.environ["MEM0_TELEMETRY"] = "False"
    if "MEM0_DIR" not in os.environ:
        from ..paths import cache_root

        os.environ["MEM0_DIR"] = str(cache_root() / "mem0")


def _import_mem0() -> Any:
    global _PATCHED
    _quiet_mem0()
    try:
        import mem0.memory.main as main
        import mem0.memory.telemetry as telemetry
    except ImportError as exc:
        raise RuntimeError(f"--beam-system=mem0 needs the mem0ai package: {INSTALL_HINT} ({exc})") from None
    telemetry.MEM0_TELEMETRY = False  # imported before us with telemetry on: off all the same
    main.MEM0_TELEMETRY = False
    if not _PATCHED:
        original = main.generate_additive_extraction_prompt

        def dated_prompt(*args: Any, **kwargs: Any) -> Any:
            date = _SESSION_DATE.get()
            if date is not None:
                kwargs.setdefault("current_date", date)
                kwargs.setdefault("timestamp", date)
            return original(*args, **kwargs)

        main.generate_additive_extraction_prompt = dated_prompt
        _PATCHED = True
    return main


@contextlib.contextmanager
def session_date(date: dt.date | None) -> Iterator[None]:
    token = _SESSION_DATE.set(date.isoformat() if date else None)
    try:
        yield
    finally:
        _SESSION_DATE.reset(token)


class Mem0System(OutsideSystem):
    """Mem0 OSS on a local Qdrant, its model calls through the harness's relay."""

    name = "mem0"

    def __init__(self, context: SystemContext, k: int | None = None) -> None:
        if context.relay is None:
            raise RuntimeError("mem0 needs the harness's model relay (SystemContext.relay)")
        self.context = context
        self.k = k or setting(context, "retrieval_k", DEFAULT_TOP_K)
        self.memory: Any = None
        self.sources: dict[str, tuple[int, ...]] = {}  # mem0 memory id -> BEAM message ids
        self.sessions: dict[int, dt.date | None] = {}

    def _build(self) -> Any:
        main = _import_mem0()
        relay = harness_relay(self.context)
        work = self.context.work_dir / "mem0"
        work.mkdir(parents=True, exist_ok=True)
        url = relay.base_url(self.system_name, ROLE)
        config = {
            "llm": {"provider": "openai", "config": {
                "model": self.context.models.models.for_role(ROLE), "openai_base_url": url,
                "api_key": "pytest-beam-relay", "temperature": 0.0, "max_tokens": 2000}},
            "embedder": {"provider": "openai", "config": {
                "model": relay.embedding_model, "openai_base_url": url, "api_key": "pytest-beam-relay",
                "embedding_dims": relay.dimensions}},
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": "beam", "path": str(work / "qdrant"), "on_disk": True,
                "embedding_model_dims": relay.dimensions}},
            "history_db_path": str(work / "history.db"),
        }
        memory = main.Memory.from_config(config)
        # its OpenAI clients wait as long as the harness does and never retry on their own
        memory.llm.client = memory.llm.client.with_options(**LIBRARY_CLIENT_OPTIONS)
        memory.embedding_model.client = memory.embedding_model.client.with_options(**LIBRARY_CLIENT_OPTIONS)
        return memory

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a Mem0 call; a failure the relay kept (cap, cassette miss, endpoint) is raised as itself."""
        relay = harness_relay(self.context)
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            relay.raise_failure(self.system_name, exc)
            raise RuntimeError(f"mem0 {what} failed: {type(exc).__name__}: {exc}") from exc
        relay.raise_failure(self.system_name)  # Mem0 logged and went on: the harness does not
        return result

    def ingest(self, documents: list[Document]) -> IngestReport:
        self.memory = self._build()
        chat = turns(documents)
        self.sessions = {t.session: t.date for t in chat}
        added = 0
        calls = windows(chat)
        for window in calls:
            first = window[0]
            ids = [t.id for t in window]
            metadata = {"message_ids": ids, "session": first.session,
                        "session_date": first.date.isoformat() if first.date else None}
            if first.date is not None:
                metadata["created_at"] = dt.datetime.combine(first.date, dt.time(), dt.UTC).isoformat()
            messages = [{"role": t.role if t.role in ("user", "assistant") else "user", "content": t.text}
                        for t in window]
            with session_date(first.date):
                result = self._call("add", self.memory.add, messages, user_id=USER_ID, metadata=metadata)
            for item in (result or {}).get("results", []):
                if item.get("id"):
                    self.sources[str(item["id"])] = tuple(ids)
                    added += 1
        return IngestReport(chunks=len(calls), empty_extractions=0,
                            entities_by_type={"Memory": added},
                            notes=[f"mem0: {len(chat)} messages in {len(calls)} add calls gave {added} memories "
                                   "(local Qdrant, model calls through the relay)"])

    def recall(self, query: str) -> list[Recalled]:
        if self.memory is None:
            raise RuntimeError("mem0: answer before ingest")
        found = self._call("search", self.memory.search, query, filters={"user_id": USER_ID}, top_k=self.k)
        out = []
        for item in (found or {}).get("results", []):
            meta = item.get("metadata") or {}
            ids = tuple(int(i) for i in meta.get("message_ids") or self.sources.get(str(item.get("id")), ()))
            session = meta.get("session")
            date = meta.get("session_date")
            out.append(Recalled(text=str(item.get("memory") or ""), message_ids=ids,
                                session=int(session) if session is not None else None,
                                date=dt.date.fromisoformat(date) if date else None,
                                score=item.get("score"), ref=str(item.get("id") or "")))
        return out

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        recalled = self.recall(question.question)
        return answer_from_recalled(self.context.models, question, recalled, system=self.system_name,
                                    details={"k": self.k})

    def close(self) -> None:
        memory, self.memory = self.memory, None
        client = getattr(getattr(memory, "vector_store", None), "client", None)
        if client is not None:
            client.close()  # Qdrant's local mode holds a lock on its folder until closed

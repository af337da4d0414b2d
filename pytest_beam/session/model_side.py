"""This process's model side: the model client, its meter, the relay, the trace, the spend cap's stop.

Built at session start and cheap until used: the client (and openai with it) is made on the
first call for it, the relay started on the first system that asks for it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..llm import Meter, ModelClient
    from ..llm.meter import Snapshot
    from ..llm.relay import ModelRelay
    from ..settings import Settings
    from .plan import RunPlan


class TraceWriter:
    """Appends every model call and agent step to this process's part of the run's trace.

    Each event carries where in the run it happened (phase, question or conversation, system): the
    `context` of the work that runs alone (an outside system's library calls from the relay's
    thread see it too), or a thread's own (`thread_context`) for a question answered beside others.
    """

    def __init__(self, path: Path, secrets: tuple[str, ...]) -> None:
        self.path = path
        self.secrets = secrets
        self.context: dict[str, str] = {}  # where in the run: phase, question or conversation, system
        self._thread = threading.local()
        self._lock = threading.Lock()
        self._ready = False  # the folder is made on the first event, not for a run that calls nothing

    def set_context(self, context: dict[str, str], thread_only: bool) -> None:
        """Where the next events happen: for this thread only, or for every thread without its own."""
        if thread_only:
            self._thread.context = context
        else:
            self.context = context

    def __call__(self, event: Mapping[str, object]) -> None:
        context = getattr(self._thread, "context", None) or self.context
        line = json.dumps({**context, **event}, default=str, sort_keys=True)
        for secret in self.secrets:
            line = line.replace(secret, "***")
        with self._lock:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._ready = True
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")


class SpendStop:
    """The spend cap, once reached, skips every later conversation and question of this process."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def check(self) -> None:
        if self.reason:
            pytest.skip(f"spend cap reached: {self.reason}")

    def reached(self, exc: BaseException) -> bool:
        """Whether `exc` is the cap being reached (it is then kept as the reason)."""
        from ..llm import BudgetExceeded

        if isinstance(exc, BudgetExceeded):
            self.reason = str(exc)
            return True
        return False


class ModelSide:
    """This process's model client (built on first use), meter, relay and trace writer."""

    def __init__(self, plan: RunPlan, settings: Settings, say: Callable[[str], None]) -> None:
        self.plan, self.settings, self.say = plan, settings, say
        self.trace = TraceWriter(plan.run_dir / f"trace-{plan.process_name}.jsonl",
                                 (settings.api_key,) if settings.api_key else ())
        self.spend = SpendStop()
        self._client: ModelClient | None = None
        self._relay: ModelRelay | None = None

    @property
    def client(self) -> ModelClient:
        if self._client is None:
            self._client = self._build_client()
        return self._client

    def _build_client(self) -> ModelClient:
        from ..llm import Budget, Cassette, FileBudget, Meter, UsageJournal
        from ..model_access import open_client
        from .worker_parts import usage_journal

        s, plan = self.settings, self.plan
        if s.role_models()["agent"] is None:  # unreachable: without a model collection skips every question
            raise RuntimeError("pytest-beam: no model is set (--beam-model), so there is no model client")
        budget: Budget | None = None
        if s.max_calls is not None or s.max_tokens is not None:
            budget = FileBudget.in_run_dir(plan.run_dir, max_calls=s.max_calls, max_tokens=s.max_tokens)
        cassette = None
        if s.record_mode != "off":
            from ..settings import question_set, recorded_settings

            cassette = Cassette(s.cassette_file(), mode=plan.record_mode, settings=recorded_settings(s),
                                questions=question_set(s))
        journal = UsageJournal(usage_journal(plan.run_dir / "parts", plan.process_name))
        return open_client(s, meter=Meter(journal=journal), cassette=cassette, budget=budget, trace=self.trace)

    @property
    def meter(self) -> Meter:
        return self.client.meter

    def usage_since(self, before: Snapshot) -> Snapshot:
        """The calls made since `before` (a meter snapshot), by role, as the record keeps them."""
        return self.meter.since(before)

    @property
    def relay(self) -> ModelRelay:
        """This process's model relay (llm/relay.py), started on first use: under xdist each worker
        serves its own, forwarding through its own client to the run's endpoint (the controller's
        embedded model included); its embeddings come from the run's embedder (`--beam-embeddings`)."""
        if self._relay is None:
            from ..llm.relay import ModelRelay
            from ..memory.embeddings import Embedder, make_embedder

            spec = getattr(self.settings, "embeddings", None) or "local"
            embedders: dict[str, Embedder] = {}
            lock = threading.Lock()

            def embed(system: str, texts: Any) -> list[list[float]]:
                with lock:
                    embedder = embedders.get(system)
                    if embedder is None:  # an endpoint embedder meters as "<system> embedding"
                        embedder = embedders[system] = make_embedder(spec, relay.client_for(system), progress=self.say)
                return embedder.embed(list(texts))

            probe = make_embedder(spec, self.client, progress=self.say)
            relay = ModelRelay(self.client, embed, dimensions=probe.dimensions, embedding_model=probe.name)
            self._relay = relay.start()
        return self._relay

    def halt(self) -> None:
        """The run stops: no model request goes out of this process any more (a question answered
        ahead in a thread would otherwise send one after its record was written)."""
        if self._client is not None:
            self._client.halt("the run has stopped")

    def relay_counts(self) -> dict[str, dict[str, int]]:
        """Requests this process's relay received, per system; nothing if it never started."""
        return self._relay.counts() if self._relay is not None else {}

    def close(self) -> None:
        if self._relay is not None:
            self._relay.close()  # its counts stay readable (relay_counts) for the record

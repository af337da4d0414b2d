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
    from ..llm.meter import Snapshot, UsageByRole
    from ..llm.relay import ModelRelay
    from ..settings import Settings
    from .plan import RunPlan


def usage_journal(run_dir: Path, process_name: str) -> Path:
    """Where a process of the run journals its model calls (``llm.UsageJournal``); the controller
    folds them all into the record's usage (``collector.RunCollector.finish``)."""
    return run_dir / "parts" / f"{process_name}.usage.jsonl"


class TraceWriter:
    """Appends every model call and agent step to this process's part of the run's trace."""

    def __init__(self, path: Path, secrets: tuple[str, ...]) -> None:
        self.path = path
        self.secrets = secrets
        self.context: dict[str, str] = {}  # where in the run: phase, question or conversation, system
        self._lock = threading.Lock()
        self._ready = False  # the folder is made on the first event, not for a run that calls nothing

    def __call__(self, event: Mapping[str, object]) -> None:
        line = json.dumps({**self.context, **event}, default=str, sort_keys=True)
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
        from ..llm import (
            Budget,
            Cassette,
            EndpointConfig,
            FileBudget,
            Meter,
            ModelClient,
            ResponseCache,
            RoleModels,
            UsageJournal,
        )

        s, plan = self.settings, self.plan
        roles = s.role_models()
        agent = roles["agent"]
        if agent is None:  # unreachable: without a model collection skips every question
            raise RuntimeError("pytest-beam: no model is set (--beam-model), so there is no model client")
        budget: Budget | None = None
        if s.max_calls is not None or s.max_tokens is not None:
            budget = FileBudget.in_run_dir(plan.run_dir, max_calls=s.max_calls, max_tokens=s.max_tokens)
        cassette = None
        if s.record_mode != "off":
            from ..settings import question_set, recorded_settings

            cassette = Cassette(s.cassette_file(), mode=plan.record_mode, settings=recorded_settings(s),
                                questions=question_set(s))
        return ModelClient(
            EndpointConfig(base_url=s.base_url, api_key=s.api_key, timeout_s=s.timeout,
                           max_retries=s.max_retries, concurrency=s.concurrency, identity=s.endpoint_identity),
            RoleModels(agent=agent, extraction=roles["extraction"],
                       resolution=roles["resolution"], judge=roles["judge"]),
            meter=Meter(journal=UsageJournal(usage_journal(plan.run_dir, plan.process_name))),
            cache=ResponseCache(s.cache) if s.cache else None,
            cassette=cassette,
            budget=budget,
            trace=self.trace,
        )

    @property
    def meter(self) -> Meter:
        return self.client.meter

    def usage_since(self, before: Snapshot) -> UsageByRole:
        """The calls made since `before` (a meter snapshot), by role, as the record keeps them."""
        return {role: usage.to_dict() for role, usage in self.meter.since(before).items()}

    @property
    def relay(self) -> ModelRelay:
        """This process's model relay (llm/relay.py), started on first use: under xdist each worker
        serves its own, forwarding through its own client to the run's endpoint (the controller's
        embedded model included); its embeddings come from the run's embedder (`--beam-embeddings`)."""
        if self._relay is None:
            from ..llm.relay import ModelRelay
            from ..memory.embeddings import make_embedder

            spec = getattr(self.settings, "embeddings", None) or "local"
            embedders: dict[str, Any] = {}
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

    def relay_counts(self) -> dict[str, dict[str, int]]:
        """Requests this process's relay received, per system; nothing if it never started."""
        return self._relay.counts() if self._relay is not None else {}

    def close(self) -> None:
        if self._relay is not None:
            self._relay.close()  # its counts stay readable (relay_counts) for the record

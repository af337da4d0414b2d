"""One pytest process's live parts: the model client, the conversations' systems and services.

Built lazily by the `beam_runtime` fixture, so a collect-only, dry or skipped run never imports
openai or starts a JVM.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..system import IngestReport, MemorySystem, SystemAnswer, SystemContext
from ..systems import DEFAULT_SYSTEM

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..llm import Meter, ModelClient
    from ..llm.meter import Snapshot, UsageByRole
    from ..llm.relay import ModelRelay
    from ..scoring import QuestionScore
    from ..scoring.names import ProfileName
    from ..services import Neo4jConnection, Neo4jProvider, Neo4jService
    from .state import BeamSession


# An answer with one of these flags is no answer (the agent hit its step limit or its timeout).
NO_ANSWER_FLAGS = frozenset({"agent_failure", "timeout"})


@dataclass
class ConversationRun:
    conversation_id: str
    system: MemorySystem
    ingest: IngestReport
    ingest_usage: UsageByRole
    system_name: str = DEFAULT_SYSTEM  # the selected name the answers are recorded under


@dataclass
class Outcome:
    """Everything one question produced, before pytest decides pass or fail."""

    question: ProbingQuestion
    answer: SystemAnswer
    score: QuestionScore | None  # None: the answer was given but judging it failed
    usage: UsageByRole
    seconds: dict[str, float] = field(default_factory=dict)
    evidence_recall: float | None = None
    system: str | None = None  # the answering memory system's name


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
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, event: Mapping[str, object]) -> None:
        line = json.dumps({**self.context, **event}, default=str, sort_keys=True)
        for secret in self.secrets:
            line = line.replace(secret, "***")
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")


class Runtime:
    """This process's model client, services and memory systems, owned by its BeamSession."""

    def __init__(self, session: BeamSession) -> None:
        self.session = session
        self.settings = session.settings
        self.conversations: dict[str, ConversationRun] = {}
        self.services: dict[str, Neo4jService] = {}
        self.connections: dict[str, Neo4jConnection] = {}
        self.cap_reason: str | None = None
        self._provider: Neo4jProvider | None = None
        self._models: ModelClient | None = None
        self._relay: ModelRelay | None = None
        self.trace = TraceWriter(session.run_dir / f"trace-{session.process_name}.jsonl",
                                 (self.settings.api_key,) if self.settings.api_key else ())

    # ------------------------------------------------------------ model client

    @property
    def models(self) -> ModelClient:
        if self._models is None:
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

            s = self.settings
            roles = s.role_models()
            agent = roles["agent"]
            if agent is None:  # unreachable: without a model collection skips every question
                raise RuntimeError("pytest-beam: no model is set (--beam-model), so there is no model client")
            budget: Budget | None = None
            if s.max_calls is not None or s.max_tokens is not None:
                budget = FileBudget.in_run_dir(self.session.run_dir, max_calls=s.max_calls, max_tokens=s.max_tokens)
            cassette = None
            if s.record_mode != "off":
                from ..settings import question_set, recorded_settings

                cassette = Cassette(s.cassette_file(), mode=self.session.record_mode, settings=recorded_settings(s),
                                    questions=question_set(s))
            self._models = ModelClient(
                EndpointConfig(base_url=s.base_url, api_key=s.api_key, timeout_s=s.timeout,
                               max_retries=s.max_retries, concurrency=s.concurrency, identity=s.endpoint_identity),
                RoleModels(agent=agent, extraction=roles["extraction"],
                           resolution=roles["resolution"], judge=roles["judge"]),
                meter=Meter(journal=UsageJournal(usage_journal(self.session.run_dir, self.session.process_name))),
                cache=ResponseCache(s.cache) if s.cache else None,
                cassette=cassette,
                budget=budget,
                trace=self.trace,
            )
        return self._models

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

            probe = make_embedder(spec, self.models, progress=self.say)
            relay = ModelRelay(self.models, embed, dimensions=probe.dimensions, embedding_model=probe.name)
            self._relay = relay.start()
        return self._relay

    def relay_counts(self) -> dict[str, dict[str, int]]:
        """Requests this process's relay received, per system; nothing if it never started."""
        return self._relay.counts() if self._relay is not None else {}

    @property
    def meter(self) -> Meter:
        return self.models.meter

    def say(self, line: str) -> None:
        """A progress line the user sees while a fixture runs, with or without xdist.

        An xdist worker appends it to the run's progress folder, which the controller prints
        (ProgressRelay); in one process, capture is suspended around the write.
        """
        if self.session.is_worker:
            path = self.session.run_dir / "progress" / f"{self.session.worker_id}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(f"[{self.session.worker_id}] {line}\n")
            return
        capture = self.session.config.pluginmanager.getplugin("capturemanager")
        reporter = self.session.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None:
            return
        from .progress import show_line

        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            show_line(reporter, line)

    # ------------------------------------------------------------ services

    def start_neo4j(self, conversation_id: str, service_name: str | None = None) -> Neo4jConnection:
        """Start the conversation's Neo4j once; the harness stops it with the conversation."""
        if conversation_id not in self.services:
            from ..services import select_provider

            if self._provider is None:
                self._provider = select_provider(self.settings.neo4j, work_dir=self.session.run_dir / "neo4j",
                                                 start_timeout_s=self.settings.neo4j_start_timeout)
                if chosen := getattr(self._provider, "selection_note", None):
                    self.say(chosen)  # auto fell back (e.g. an engine without the pinned image)
                note = getattr(self._provider, "first_use_note", None)
                if note is not None and (line := note()):
                    self.say(line)  # minutes of Maven before the first start, once per machine
            service = self._provider.create(service_name or f"conv{conversation_id}")
            self.services[conversation_id] = service
            self.connections[conversation_id] = service.start()
            self.session.require_collector().note_service(conversation_id, self._provider.name)
        return self.connections[conversation_id]

    # ------------------------------------------------------------ conversations

    def run_key(self, system_name: str, conversation_id: str) -> str:
        """The key of one system's run on one conversation: the bare conversation id when the run
        compares nothing (the default graphrag alone, as records always had), else `system/id`."""
        from .selection import bare_ids

        return conversation_id if bare_ids(self.session.systems) else f"{system_name}/{conversation_id}"

    def system_context(self, system_name: str, conversation_id: str) -> SystemContext:
        """What a system gets for one conversation; the question's sources go to a measurement aid only."""
        from ..systems import MEASUREMENT_AIDS

        key = self.run_key(system_name, conversation_id)
        work = self.session.run_dir / (f"conv{conversation_id}" if key == conversation_id
                                       else f"conv{conversation_id}-{system_name}")
        gold = None
        if system_name in MEASUREMENT_AIDS:  # registry names only: a conftest's name can never claim it
            from ..systems.gold_evidence import gold_evidence_lookup

            gold = gold_evidence_lookup(q for q in self.session.require_bench_set().questions
                                        if q.conversation_id == conversation_id)
        return SystemContext(
            conversation_id=conversation_id, models=self.models, settings=self.settings, work_dir=work,
            start_neo4j=lambda: self.start_neo4j(key, work.name), progress=self.say,
            gold_evidence=gold, system_name=system_name, relay=lambda: self.relay,
        )

    def open_conversation(self, conversation_id: str, system_name: str | None = None) -> ConversationRun:
        """One system's instance for one conversation, ingested once (the fixture closes it after
        the conversation's last question of that system)."""
        if self.cap_reason:
            pytest.skip(f"spend cap reached: {self.cap_reason}")
        system_name = system_name or self.session.systems[0]
        key = self.run_key(system_name, conversation_id)
        context = self.system_context(system_name, conversation_id)
        system = self.session.config.hook.pytest_beam_make_system(context=context)
        if system is None:
            raise RuntimeError(f"no pytest_beam_make_system implementation returned a system for {system_name!r}")
        documents = list(self.session.require_bench_set().documents[conversation_id])
        before = self.meter.snapshot()
        from ..data.ids import conversation_label

        tier = self.session.require_bench_set().tier
        self.trace.context = {"conversation": conversation_label(tier, conversation_id), "phase": "ingest",
                              "system": system_name}
        started = time.monotonic()
        try:
            report = system.ingest(documents)
        except BaseException as exc:  # Ctrl-C included: the time and the calls it took are kept
            if not isinstance(exc, pytest.skip.Exception):  # a system that skips has not failed
                self.session.require_collector().add_failed_ingest(key, time.monotonic() - started,
                                                         _usage_dict(self.meter.since(before)), _failure_line(exc))
            if isinstance(exc, Exception) and _is_budget(exc):
                self.cap_reason = str(exc)
                system.close()
                pytest.skip(f"spend cap reached during ingest: {exc}")
            system.close()
            raise
        finally:
            self.trace.context = {}
        report.seconds = report.seconds or (time.monotonic() - started)
        usage = _usage_dict(self.meter.since(before))
        self.session.require_collector().add_ingest(key, report, usage)
        run = ConversationRun(conversation_id, system, report, usage, system_name)
        self.conversations[key] = run
        return run

    def close_conversation(self, conversation_id: str) -> None:
        """Close a run by its key (`run_key`): its system, then the Neo4j it started."""
        run = self.conversations.pop(conversation_id, None)
        try:
            if run is not None:
                run.system.close()
        finally:
            service = self.services.pop(conversation_id, None)
            self.connections.pop(conversation_id, None)
            if service is not None:
                service.stop()

    def close(self) -> None:
        try:
            for cid in list(self.conversations) + list(self.services):
                self.close_conversation(cid)
        finally:
            if self._relay is not None:
                self._relay.close()  # its counts stay readable (relay_counts) for the record

    # ------------------------------------------------------------ one question

    def answer_and_score(self, question: ProbingQuestion, conversation: ConversationRun,
                         unjudged_answer: Callable[[Outcome], None] | None = None) -> Outcome:
        """The system's answer and its score. When judging fails after the answer was given, the
        answer is handed to ``unjudged_answer`` (an Outcome without a score) before the error
        propagates, so the record keeps it and ``pytest-beam rejudge`` can score it later."""
        if self.cap_reason:
            pytest.skip(f"spend cap reached: {self.cap_reason}")
        from ..scoring import evidence_recall, score_question

        before = self.meter.snapshot()
        seconds: dict[str, float] = {}
        system_name = conversation.system_name
        self.trace.context = {"question": question.id, "phase": "agent", "system": system_name}
        answer: SystemAnswer | None = None
        judging: float | None = None  # when the judge phase started
        try:
            started = time.monotonic()
            answer = conversation.system.answer(question.for_system())
            seconds["agent"] = time.monotonic() - started
            self.trace({"kind": "agent_trace", "steps": answer.trace, "answer": answer.text, "flags": answer.flags})
            if NO_ANSWER_FLAGS & set(answer.flags):
                score = unjudged(question, self.settings.scorer)  # nothing to judge: no call paid for it
            else:
                self.trace.context = {"question": question.id, "phase": "judge", "system": system_name}
                judging = time.monotonic()
                score = score_question(question, answer.text, self.models, mode=self.settings.scorer,
                                       judge_runs=self.settings.judge_runs)
                seconds["judge"] = time.monotonic() - judging
        except BaseException as exc:
            if answer is not None and unjudged_answer is not None:
                if judging is not None:
                    seconds["judge"] = time.monotonic() - judging
                recall = evidence_recall(question.source_message_ids, answer.retrieved_message_ids)
                unjudged_answer(Outcome(question, answer, None, _usage_dict(self.meter.since(before)), seconds,
                                        recall, system_name))
            if isinstance(exc, Exception) and _is_budget(exc):
                self.cap_reason = str(exc)
                pytest.skip(f"spend cap reached: {exc}")
            raise
        finally:
            self.trace.context = {}
        usage = _usage_dict(self.meter.since(before))
        recall = evidence_recall(question.source_message_ids, answer.retrieved_message_ids)
        return Outcome(question, answer, score, usage, seconds, recall, system_name)


def unjudged(question: ProbingQuestion, mode: ProfileName) -> QuestionScore:
    """The score of a question the agent did not answer (step limit, timeout): 0, no judge call."""
    from ..scoring import QuestionScore

    events = question.ability == "event_ordering"
    return QuestionScore(question_id=question.id, ability=question.ability, mode=mode, score=0.0, judge_calls=0,
                         event_f1=0.0 if events else None, event_tau_norm=0.0 if events else None)


def _is_budget(exc: BaseException) -> bool:
    from ..llm import BudgetExceeded

    return isinstance(exc, BudgetExceeded)


def _failure_line(exc: BaseException) -> str:
    """What stopped an ingest, in one line (the type kept: a reader filters on it)."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:500]


def _usage_dict(snapshot: Snapshot) -> UsageByRole:
    return {role: usage.to_dict() for role, usage in snapshot.items()}

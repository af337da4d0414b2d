"""Each system's run on a conversation: the system made, its documents ingested once, closed after its questions.

The `beam_conversation` fixture opens a run (`Conversations.open`) before the conversation's
first question of that system and closes it after the last; a system comes from the
`pytest_beam_make_system` hook (the registry's built-in systems answer it last).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from ..system import IngestReport, MemorySystem, SystemContext
from ..system_registry import DEFAULT_SYSTEM

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from ..llm.meter import Snapshot
    from ..settings import Settings
    from .graphs import GraphServices
    from .model_side import ModelSide
    from .plan import RunPlan
    from .question_pool import QuestionPool
    from .run_results import RunResults


@dataclass
class ConversationRun:
    conversation_id: str
    system: MemorySystem
    ingest: IngestReport
    ingest_usage: Snapshot
    system_name: str = DEFAULT_SYSTEM  # the selected name the answers are recorded under
    pool: QuestionPool | None = None  # its questions answered ahead, when the system answers concurrently


class Conversations:
    """The open runs of this process, by run key (`run_key`)."""

    def __init__(self, plan: RunPlan, settings: Settings, systems: list[str], bench_set: BenchmarkSet, *,
                 models: ModelSide, graphs: GraphServices, results: RunResults,
                 say: Callable[[str], None]) -> None:
        self.plan, self.settings, self.systems, self.bench_set = plan, settings, systems, bench_set
        self.models, self.graphs, self.results, self.say = models, graphs, results, say
        self.runs: dict[str, ConversationRun] = {}

    def run_key(self, system_name: str, conversation_id: str) -> str:
        """The key of one system's run on one conversation: the bare conversation id when the run
        compares nothing (the default graphrag alone, as records always had), else `system/id`."""
        from .system_choice import bare_ids

        return conversation_id if bare_ids(self.systems) else f"{system_name}/{conversation_id}"

    def system_context(self, system_name: str, conversation_id: str) -> SystemContext:
        """What a system gets for one conversation; the question's sources go to a measurement aid only."""
        from ..system_registry import MEASUREMENT_AIDS

        key = self.run_key(system_name, conversation_id)
        work = self.plan.run_dir / (f"conv{conversation_id}" if key == conversation_id
                                    else f"conv{conversation_id}-{system_name}")
        gold = None
        if system_name in MEASUREMENT_AIDS:  # registry names only: a conftest's name can never claim it
            from ..systems.gold_evidence import gold_evidence_lookup

            gold = gold_evidence_lookup(q for q in self.bench_set.questions if q.conversation_id == conversation_id)
        models = self.models
        return SystemContext(
            conversation_id=conversation_id, models=models.client, settings=self.settings, work_dir=work,
            start_neo4j=lambda procedures=(): self.graphs.start(key, work.name, procedures), progress=self.say,
            gold_evidence=gold, system_name=system_name, relay=lambda: models.relay,
        )

    def open(self, conversation_id: str, system_name: str | None = None) -> ConversationRun:
        """One system's instance for one conversation, ingested once (the fixture closes it after
        the conversation's last question of that system)."""
        models = self.models
        models.spend.check()
        system_name = system_name or self.systems[0]
        key = self.run_key(system_name, conversation_id)
        self.plan.run_dir.mkdir(parents=True, exist_ok=True)  # the run's folder, before any system's own
        context = self.system_context(system_name, conversation_id)
        system = self.plan.config.hook.pytest_beam_make_system(context=context)
        if system is None:
            raise RuntimeError(f"no pytest_beam_make_system implementation returned a system for {system_name!r}")
        documents = list(self.bench_set.documents[conversation_id])
        before = models.meter.snapshot()
        from ..data.ids import conversation_label

        models.trace.context = {"conversation": conversation_label(self.bench_set.tier, conversation_id),
                                "phase": "ingest", "system": system_name}
        started = time.monotonic()
        try:
            report = system.ingest(documents)
        except BaseException as exc:  # Ctrl-C included: the time and the calls it took are kept
            if not isinstance(exc, pytest.skip.Exception):  # a system that skips has not failed
                self.results.add_failed_ingest(key, time.monotonic() - started, models.usage_since(before),
                                                 _failure_line(exc))
            if models.spend.reached(exc):
                system.close()
                pytest.skip(f"spend cap reached during ingest: {exc}")
            system.close()
            raise
        finally:
            models.trace.context = {}
        report.seconds = report.seconds or (time.monotonic() - started)
        usage = models.usage_since(before)
        self.results.add_ingest(key, report, usage)
        run = ConversationRun(conversation_id, system, report, usage, system_name)
        self.runs[key] = run
        return run

    def close(self, key: str) -> None:
        """Close a run by its key (`run_key`): its questions not started, its system, then the Neo4j it started."""
        run = self.runs.pop(key, None)
        try:
            if run is not None:
                if run.pool is not None:
                    run.pool.stop()
                run.system.close()
        finally:
            self.graphs.stop(key)

    def close_all(self) -> None:
        for key in list(self.runs):
            self.close(key)


def _failure_line(exc: BaseException) -> str:
    """What stopped an ingest, in one line (the type kept: a reader filters on it)."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:500]

"""The session's start: from the configure-time `RunPlan` to a complete `BeamSession`, in one place.

In order: the systems and the question set (a data or selection problem stops the run before
anything starts), SIGTERM as Ctrl-C, the controller's model endpoint (checked, or the embedded
model started, before any Neo4j; the run's settings are decided here, once), then this
process's parts. Nothing of them calls a model or starts a service yet.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from .plan import RunPlan
from .progress import show_line
from .state import BeamSession

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from ..settings import Settings
    from .endpoint import RunEndpoint
    from .interrupt import TerminateAsInterrupt


def start_session(plan: RunPlan, reporter: pytest.TerminalReporter | None) -> BeamSession:
    """The session, complete; a usage error (exit 4) when the questions or the endpoint cannot be had."""
    from .endpoint import RunEndpoint
    from .interrupt import TerminateAsInterrupt
    from .question_items import load_questions

    started = time.time()
    systems, bench_set = load_questions(plan)
    if bench_set.missing_note and reporter is not None and not plan.is_worker:
        # which conversations are left out, and how to get them
        reporter.write_line(bench_set.missing_note, yellow=True)
    terminate = TerminateAsInterrupt()
    terminate.install()
    endpoint = RunEndpoint()
    try:
        settings = plan.settings if plan.is_worker else open_endpoint(endpoint, plan, reporter)
        return _build(plan, settings, systems, bench_set, endpoint, terminate, started, reporter)
    except BaseException:
        endpoint.stop()
        terminate.restore()
        raise


def open_endpoint(endpoint: RunEndpoint, plan: RunPlan, reporter: pytest.TerminalReporter | None) -> Settings:
    """The run's settings once its endpoint answers (or the embedded model serves); EndpointProblem as a usage error."""
    from .endpoint import EndpointProblem

    def say(line: str) -> None:
        if reporter is not None:
            show_line(reporter, line)

    try:
        settings = endpoint.open(plan.config, plan.settings, plan.record_mode, say)
    except EndpointProblem as exc:
        raise pytest.UsageError(str(exc)) from None
    if settings.cassette is not None and plan.record_mode == "new_episodes":
        from ..llm import Cassette
        from ..settings import question_set, recorded_settings

        Cassette.refresh_header(settings.cassette, recorded_settings(settings), question_set(settings))
    return settings


def _build(plan: RunPlan, settings: Settings, systems: list[str], bench_set: BenchmarkSet, endpoint: RunEndpoint,
           terminate: TerminateAsInterrupt, started: float, reporter: pytest.TerminalReporter | None) -> BeamSession:
    from .conversations import Conversations
    from .graphs import GraphServices
    from .model_side import ModelSide
    from .progress import ProgressLines, ProgressRelay
    from .question_step import QuestionStep
    from .run_results import RunResults

    say = ProgressLines(plan)
    models = ModelSide(plan, settings, say)
    results = RunResults(plan, settings, systems, bench_set, started=started, relay_counts=models.relay_counts,
                             terminate=terminate)
    graphs = GraphServices(plan, settings, say)
    conversations = Conversations(plan, settings, systems, bench_set, models=models, graphs=graphs,
                                  results=results, say=say)
    progress = None
    if not plan.is_worker and getattr(plan.config.option, "numprocesses", None) and reporter:
        progress = ProgressRelay(plan.run_dir / "progress", reporter)
    return BeamSession(plan=plan, settings=settings, systems=systems, bench_set=bench_set, endpoint=endpoint,
                       terminate=terminate, say=say, models=models, results=results, graphs=graphs,
                       conversations=conversations, questions=QuestionStep(settings, models), progress=progress)


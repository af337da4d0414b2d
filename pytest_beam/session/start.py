"""The session's start: from the configure-time `RunPlan` to a complete `BeamSession`, in one place.

In order: the systems and the question set (a data or selection problem stops the run before
anything starts), the controller's check that the results disk has room, SIGTERM as Ctrl-C, the
controller's model endpoint (checked, or the embedded
model started, before any Neo4j; the run's settings are decided here, once), then this
process's parts. Nothing of them calls a model or starts a service yet. A run refused at its
endpoint leaves no results folder behind.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
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
    made = None
    if not plan.is_worker:
        made = _first_missing(plan.run_dir)
        _check_room(plan)
    terminate = TerminateAsInterrupt()
    terminate.install()
    endpoint = RunEndpoint()
    try:
        settings = plan.settings if plan.is_worker else open_endpoint(endpoint, plan, reporter)
    except BaseException:
        endpoint.stop()
        terminate.restore()
        if made is not None:  # a run that never started leaves no folder the room check made
            shutil.rmtree(made, ignore_errors=True)
        raise
    try:
        return _build(plan, settings, systems, bench_set, endpoint, terminate, started, reporter)
    except BaseException:
        endpoint.stop()
        terminate.restore()
        raise


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of `path` that does not exist yet (None: it all does)."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


def _check_room(plan: RunPlan) -> None:
    """A results disk that cannot hold the run's files stops the run here, in one line, before any
    model is called or any service started (a collect-only or dry run writes nothing: not checked)."""
    settings = plan.settings
    if settings.dry_run or plan.config.option.collectonly:
        return
    from .write_faults import room_problem

    counter = None
    if settings.max_calls is not None or settings.max_tokens is not None:
        from ..llm import FileBudget

        counter = FileBudget.in_run_dir(plan.run_dir, max_calls=settings.max_calls,
                                        max_tokens=settings.max_tokens).prepare
    problem = room_problem(plan.run_dir, counter)
    if problem is not None:
        raise pytest.UsageError(problem)


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
                         terminate=terminate, metered=models.metered, logs=lambda: {**models.logs(),
                                                                                    "progress lines": say.log})
    graphs = GraphServices(plan, settings, say)
    conversations = Conversations(plan, settings, systems, bench_set, models=models, graphs=graphs,
                                  results=results, say=say)
    progress = None
    if not plan.is_worker and getattr(plan.config.option, "numprocesses", None) and reporter:
        progress = ProgressRelay(plan.run_dir / "progress", reporter)
    return BeamSession(plan=plan, settings=settings, systems=systems, bench_set=bench_set, endpoint=endpoint,
                       terminate=terminate, say=say, models=models, results=results, graphs=graphs,
                       conversations=conversations, questions=QuestionStep(settings, models), progress=progress)


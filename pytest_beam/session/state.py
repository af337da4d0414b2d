"""The benchmark's session, in two phases, each built once and complete: the `RunPlan` and the `BeamSession`.

`RunPlan` is what `pytest_configure` decides (`configure.py`): the settings as configured, this
process's place in the run, the cassette mode. `BeamSession` is built at `pytest_sessionstart`
(`start.py`) from the plan once the questions are loaded and, on the controller, the model
endpoint is open: it holds the run's settings (never replaced after), the selected systems and
question set, the run's results, and this process's live parts, each a module of its own:
`model_side.py` (client, relay, trace), `graphs.py` (Neo4j per conversation), `conversations.py`
(each system's run on a conversation), `question_step.py` (answer and score). The parts import
openai or start a JVM only on first use, so a collect-only or dry run does neither.

The per-config plugin object (`hooks.BeamSessionPlugin`) holds the plan from configure and the
session from session start; the session is also on the config's stash, where the fixtures find
it, so nothing lives in module state.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..settings import Settings
from .plan import RunPlan

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from .conversations import Conversations
    from .endpoint import RunEndpoint
    from .graphs import GraphServices
    from .interrupt import TerminateAsInterrupt
    from .model_side import ModelSide
    from .progress import ProgressLines, ProgressRelay
    from .question_step import QuestionStep
    from .run_results import RunResults

SESSION_KEY: pytest.StashKey[BeamSession] = pytest.StashKey()


@dataclass(frozen=True)
class BeamSession:
    """The benchmark's session in this process, built complete at session start (`start.py`)."""

    plan: RunPlan
    settings: Settings  # the run's: the plan's, with the endpoint the controller opened (embedded model)
    systems: list[str]  # --beam-system, checked
    bench_set: BenchmarkSet  # the selected set's questions and documents
    endpoint: RunEndpoint  # the controller's model endpoint (on a worker, one never opened)
    terminate: TerminateAsInterrupt  # SIGTERM as Ctrl-C, for the session's lifetime
    say: ProgressLines  # a progress line the user sees while a fixture runs
    models: ModelSide
    results: RunResults
    graphs: GraphServices
    conversations: Conversations
    questions: QuestionStep
    progress: ProgressRelay | None  # the workers' progress lines, on an xdist controller only

    @property
    def config(self) -> pytest.Config:
        return self.plan.config

    @property
    def is_worker(self) -> bool:
        return self.plan.is_worker

    @property
    def run_dir(self) -> Path:
        return self.plan.run_dir

    def close(self) -> None:
        """This process's live parts, at the session's end: every conversation's system and Neo4j, then the relay."""
        try:
            self.conversations.close_all()
        finally:
            try:
                self.graphs.stop_all()
            finally:
                self.models.close()


def get_session(config: pytest.Config) -> BeamSession | None:
    """The config's BeamSession: None when the suite is off in this run, or before the session starts."""
    return config.stash.get(SESSION_KEY, None)

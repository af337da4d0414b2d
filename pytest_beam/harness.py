"""The harness: the pytest session's state, the fixtures, and one question's path through it.

A question reads straight through `run_question`: the conversation's memory system answers, the
judge scores, the metrics land as user properties (so JUnit XML and xdist carry them), the answer
is compared with its snapshot, and the outcome follows the score.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .settings import OPTION_BY_NAME, Settings, resolve

STASH_KEY: pytest.StashKey[BeamState] = pytest.StashKey()
SUITE_NODEID = "beam"
NO_MODEL_REASON = (
    "no model endpoint configured: set --beam-base-url and --beam-model (or BEAM_BASE_URL and "
    "BEAM_MODEL, or beam_base_url/beam_model in the ini file; the key goes in BEAM_API_KEY), or "
    "replay a cassette with --beam-record-mode=none --beam-cassette FILE --beam-model NAME"
)


@dataclass
class BeamState:
    settings: Settings
    enabled: bool
    worker_id: str | None  # None on the controller or without xdist
    run_id: str
    run_dir: Path
    bench_set: Any = None  # pytest_beam.data.sets.BenchmarkSet
    collector: Any = None  # pytest_beam.results.collect.RunCollector
    runtime: Any = None  # pytest_beam.runtime.Runtime, built by the first fixture that needs it
    record_mode: str = "off"  # the cassette mode in effect (decided once, on the controller)
    progress: Any = None  # pytest_beam.runtime.ProgressRelay on an xdist controller
    started: float = field(default_factory=time.time)

    @property
    def is_worker(self) -> bool:
        return self.worker_id is not None


def get_state(config: pytest.Config) -> BeamState | None:
    return config.stash.get(STASH_KEY, None)


# ---------------------------------------------------------------- configuration

def _explicit_beam_flag(config: pytest.Config) -> bool:
    args = [str(a) for a in config.invocation_params.args]
    return any(a == "--beam" or a.startswith(("--beam-mode", "--beam-data")) for a in args)


def _suite_wanted(config: pytest.Config, settings_origin_mode: bool) -> bool:
    """Opt-in: a beam flag on the command line, or beam_mode in the ini file / BEAM_MODE;
    and with explicit test paths only when a beam flag says so."""
    explicit_paths = config.args_source == pytest.Config.ArgsSource.ARGS
    if _explicit_beam_flag(config) or config.getoption("beam_collect", False):
        return True
    return settings_origin_mode and not explicit_paths


def configure(config: pytest.Config) -> BeamState:
    settings = resolve(
        get_flag=lambda name: config.getoption("beam_" + name, None) if OPTION_BY_NAME[name].flag else None,
        get_ini=lambda name: config.getini("beam_" + name),
        rootdir=config.rootpath,
    )
    mode_configured = bool(config.getini("beam_mode") or os.environ.get("BEAM_MODE"))
    enabled = _suite_wanted(config, mode_configured)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        if workerinput.get("beam_loadgroup"):
            config.option.loadgroup = True  # xdist reads it on the worker to suffix nodeids with @group
        worker_id = workerinput["workerid"]
        run_id = workerinput.get("beam_run_id") or uuid.uuid4().hex[:12]
    else:
        worker_id, run_id = None, time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    state = BeamState(settings=settings, enabled=enabled, worker_id=worker_id, run_id=run_id,
                      run_dir=settings.results / run_id)
    config.stash[STASH_KEY] = state
    if enabled and workerinput is None:
        if settings.dry_run and getattr(config.option, "numprocesses", None):
            config.option.dist, config.option.numprocesses = "no", None  # the estimate needs no workers
        _use_loadgroup(config)
    if enabled and settings.record_mode != "off":
        if workerinput is not None:
            state.record_mode = workerinput["beam_record_mode"]
        else:
            from .llm import Cassette

            state.record_mode = Cassette.prepare(settings.cassette, settings.record_mode)
    return state


def _use_loadgroup(config: pytest.Config) -> None:
    """`-n N` alone means `--dist load` to xdist; a conversation must stay on one worker."""
    if not getattr(config.option, "numprocesses", None):
        return
    args = [str(a) for a in config.invocation_params.args]
    if any(a.startswith("--dist") or a == "-d" for a in args):
        return
    if getattr(config.option, "dist", "no") in ("no", "load"):
        config.option.dist = "loadgroup"


# ---------------------------------------------------------------- session, collection

def on_session_start(session: pytest.Session) -> None:
    state = get_state(session.config)
    if state is None or not state.enabled:
        return
    from .data.errors import BeamDataError
    from .data.sets import load_set

    try:
        state.bench_set = load_set(state.settings.mode, state.settings.data)
    except BeamDataError as exc:
        pytest.exit(f"pytest-beam: data source problem: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    from .results.collect import RunCollector

    state.collector = RunCollector(state)
    reporter = session.config.pluginmanager.getplugin("terminalreporter")
    if not state.is_worker and getattr(session.config.option, "numprocesses", None) and reporter is not None:
        from .runtime import ProgressRelay

        state.progress = ProgressRelay(state.run_dir / "progress", reporter)


def add_question_items(session: pytest.Session, config: pytest.Config, items: list) -> None:
    state = get_state(config)
    if state is None or not state.enabled or state.bench_set is None:
        return
    from . import suite

    module = pytest.Module.from_parent(session, path=Path(suite.__file__), nodeid=SUITE_NODEID)
    new = list(session.genitems(module))  # through pytest's own hooks: counts, -v, collect reports
    if not state.settings.model_configured and not state.settings.dry_run:
        for item in new:
            item.add_marker(pytest.mark.skip(reason=NO_MODEL_REASON))
    items[:0] = new


def question_params(state: BeamState) -> list:
    params = []
    lite_ids = set(_lite_ids())
    for q in state.bench_set.questions:
        marks = [pytest.mark.beam, getattr(pytest.mark, q.ability), pytest.mark.xdist_group(f"conv{q.conversation_id}")]
        if q.id in lite_ids:
            marks.append(pytest.mark.lite)
        if q.known_bad_rubric:
            marks += [pytest.mark.known_bad_rubric,
                      pytest.mark.xfail(reason=f"known bad rubric: {q.known_bad_rubric}", strict=False)]
        params.append(pytest.param(q.conversation_id, q, id=q.id, marks=marks))
    return params


def _lite_ids() -> list[str]:
    from .data.sets import lite_spec

    return list(lite_spec()["questions"])


def selected_questions(session: pytest.Session) -> list:
    return [item.callspec.params["beam_question"] for item in session.items
            if getattr(item, "callspec", None) and "beam_question" in item.callspec.params]


def on_collection_finish(session: pytest.Session) -> None:
    state = get_state(session.config)
    if state is None or not state.enabled or state.bench_set is None or state.is_worker:
        return
    questions = selected_questions(session)
    if not questions or session.config.option.collectonly:
        return
    from .estimate import estimate_run, format_estimate

    estimate = estimate_run(state.bench_set, questions, state.settings)
    if state.settings.dry_run:
        session.config.get_terminal_writer().line("\n" + format_estimate(estimate, state.settings))
        pytest.exit("pytest-beam: dry run, no model called and no service started", returncode=0)
    if state.settings.model_configured and not state.settings.replaying:
        problem = estimate.over_cap(state.settings)
        if problem:
            pytest.exit(f"pytest-beam: {problem}", returncode=pytest.ExitCode.USAGE_ERROR)


# ---------------------------------------------------------------- reporting hooks

# `pytest_runtest_logreport` gets no config (under xdist the controller receives workers'
# reports), so the active state is kept here: a stack, because pytester nests sessions.
_ACTIVE: list[BeamState] = []


def on_logreport(report: pytest.TestReport) -> None:
    state = _ACTIVE[-1] if _ACTIVE else None
    if state is None or state.collector is None:
        return
    state.collector.add_report(report)


def activate(state: BeamState) -> None:
    _ACTIVE.append(state)


def on_unconfigure(config: pytest.Config) -> None:
    state = get_state(config)
    if state is not None and state in _ACTIVE:
        _ACTIVE.remove(state)


def on_worker_done(node) -> None:
    state = get_state(node.config)
    if state is None or state.collector is None:
        return
    payload = node.workeroutput.get("beam")
    if payload:
        state.collector.merge_worker(json.loads(payload))


def on_session_finish(session: pytest.Session, exitstatus) -> None:
    state = get_state(session.config)
    if state is None or state.collector is None:
        return
    if state.runtime is not None:
        state.runtime.close()
    if state.progress is not None:
        state.progress.stop()
    if state.is_worker:
        session.config.workeroutput["beam"] = json.dumps(state.collector.worker_payload())
        return
    state.collector.finish(session, exitstatus)


def write_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    state = get_state(config)
    if state is None or state.collector is None or state.is_worker:
        return
    state.collector.write_summary(terminalreporter)


# ---------------------------------------------------------------- fixtures

def configure_node(node) -> None:
    """xdist controller: every worker shares the run id, the cassette mode and load groups."""
    state = get_state(node.config)
    if state is None or not state.enabled:
        return
    node.workerinput["beam_run_id"] = state.run_id
    node.workerinput["beam_record_mode"] = state.record_mode
    node.workerinput["beam_loadgroup"] = node.config.option.dist == "loadgroup"


def make_scheduler(config, log):
    state = get_state(config)
    if state is None or not state.enabled or config.getvalue("dist") != "loadgroup":
        return None
    from .xdist_scheduling import make_scheduler as conversation_scheduler

    return conversation_scheduler(config, log)


def generate_tests(metafunc: pytest.Metafunc) -> None:
    state = get_state(metafunc.config)
    if state is None or not state.enabled or state.bench_set is None:
        return
    if metafunc.definition.nodeid.startswith(SUITE_NODEID + "::") and "beam_question" in metafunc.fixturenames:
        metafunc.parametrize(("beam_conversation", "beam_question"), question_params(state),
                             indirect=["beam_conversation"], scope="session")


@pytest.fixture(scope="session")
def beam_runtime(request):
    """This process's model client, services and systems (built on first use)."""
    from .runtime import Runtime

    state = get_state(request.config)
    if state.runtime is None:
        state.runtime = Runtime(state, request.config)
    return state.runtime


@pytest.fixture(scope="session")
def beam_conversation(request, beam_runtime):
    """One conversation's memory system, ingested once; its service stops after its questions."""
    conversation = beam_runtime.open_conversation(request.param)
    yield conversation
    beam_runtime.close_conversation(request.param)


@pytest.fixture
def beam_outcome(beam_question, beam_conversation, beam_runtime):
    """Answer and judge in setup, so an infrastructure fault is an ERROR, never a score."""
    return beam_runtime.answer_and_score(beam_question, beam_conversation)


class GraphRAGProvider:
    """The built-in system answers `pytest_beam_make_system` last, so any conftest wins."""

    @pytest.hookimpl(trylast=True)
    def pytest_beam_make_system(self, context):
        from .memory.graphrag import GraphRAGSystem

        return GraphRAGSystem(context)


def check_question(outcome, runtime, user_properties: list, snapshot) -> None:
    """Properties go straight onto the item: JUnit XML writes them under any junit_family,
    and `record_property` would warn under the default xunit2."""
    from .outcome import check_outcome

    check_outcome(outcome, runtime, lambda name, value: user_properties.append((name, value)), snapshot)

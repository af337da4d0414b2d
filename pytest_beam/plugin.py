"""pytest hooks of pytest-beam, and nothing else: each hook hands over to a room of the package.

Kept light on purpose: this module is imported by every pytest run in an environment where the
plugin is installed, so heavy libraries (neo4j, openai, pyarrow, the embedder) load only inside
hooks that need them.
"""

from __future__ import annotations

import pytest

from .settings import OPTIONS, SettingsError

ABILITY_MARKERS = (
    "abstention", "contradiction_resolution", "event_ordering", "information_extraction",
    "instruction_following", "knowledge_update", "multi_session_reasoning", "preference_following",
    "summarization", "temporal_reasoning",
)
MARKERS = {
    "beam": "a BEAM probing question (collected by pytest-beam)",
    "lite": "one of the two questions of the lite set",
    "known_bad_rubric": "a BEAM question whose rubric is wrong; xfail, not strict",
    "neo4j": "needs a real Neo4j service (started by the test session)",
    "live_model": "needs the local llama.cpp server with SmolLM2 (the live stage)",
    "e2e": "slow end-to-end run of the whole pipeline (run apart with -m e2e; CI runs it)",
    **{name: f"BEAM ability {name}" for name in ABILITY_MARKERS},
}


def pytest_addhooks(pluginmanager):
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser):
    group = parser.getgroup("beam", "pytest-beam: the BEAM memory benchmark")
    for option in OPTIONS:
        extra = f" [ini {option.ini_name}; env {', '.join(option.env_names)}]"
        if option.flag:
            kwargs = {"action": "store_true"} if option.is_bool else {"metavar": option.name.upper()}
            if option.choices and not option.is_bool:
                kwargs["choices"] = option.choices
            group.addoption(option.flag_name, dest="beam_" + option.name, default=None,
                            help=option.help + extra, **kwargs)
        parser.addini(option.ini_name, option.help, default=None)
    group.addoption("--beam", dest="beam_collect", action="store_true", default=False,
                    help="Collect the BEAM questions even when test paths are given.")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    # Answer snapshots are named by question id, not by syrupy's test-file convention (see
    # results/snapshots.py); syrupy says so on every write, which is expected here.
    config.addinivalue_line("filterwarnings", "ignore:\\nCan not relate snapshot:UserWarning")
    from . import harness

    try:
        state = harness.configure(config)
    except SettingsError as exc:
        raise pytest.UsageError(f"pytest-beam: {exc}") from None
    if state.enabled:
        harness.activate(state)
        config.pluginmanager.register(harness, "beam-fixtures")  # the fixtures live there
        config.pluginmanager.register(harness.GraphRAGProvider(), "beam-graphrag")


def pytest_generate_tests(metafunc):
    from . import harness

    harness.generate_tests(metafunc)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    from . import harness

    harness.configure_node(node)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    from . import harness

    return harness.make_scheduler(config, log)


def pytest_sessionstart(session):
    from . import harness

    harness.on_session_start(session)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    from . import harness

    harness.add_question_items(session, config, items)


def pytest_collection_finish(session):
    from . import harness

    harness.on_collection_finish(session)


def pytest_runtest_logreport(report):
    from . import harness

    harness.on_logreport(report)


def pytest_testnodedown(node, error):
    from . import harness

    harness.on_worker_done(node)


def pytest_sessionfinish(session, exitstatus):
    from . import harness

    harness.on_session_finish(session, exitstatus)


def pytest_unconfigure(config):
    from . import harness

    harness.on_unconfigure(config)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from . import harness

    harness.write_terminal_summary(terminalreporter, config)

"""The project's own tests (not the benchmark): what every test process needs."""

from __future__ import annotations

import contextlib
import os

# pytester's in-process runs (test_plugin_collection.py and others) put sys.modules back after each
# run: what they import is imported again by the next one. numpy's C extension cannot be loaded twice
# in one process, and LangSmith's pytest plugin (blocked in every other run, see below; pytester
# clears PYTEST_ADDOPTS) took about 1.4 s each time: both are imported here once and stay loaded.
import numpy  # noqa: F401
import pytest

with contextlib.suppress(ImportError):  # present with the test extra (langmem's dependencies)
    import langsmith.pytest_plugin  # noqa: F401

# The scripted model server (a declared test double for the model) for every test that asks for it.
from tests.model_server import model_server, model_server_factory  # noqa: F401

# A small real filesystem for full-disk tests (tests/small_disk.py).
from tests.small_disk import small_disk  # noqa: F401

# LangSmith's pytest plugin, which langmem's dependencies install with the test extra: no test uses
# it, and loading it costs about 1.4 s of imports in every pytest process (the suite starts some
# two hundred: its end-to-end runs and their workers). pyproject.toml's addopts blocks it here.
SUBPROCESS_ADDOPTS = "-p no:langsmith_plugin"


def pytest_configure(config: pytest.Config) -> None:
    # This session has read PYTEST_ADDOPTS already. The pytest runs the tests start as subprocesses
    # must not inherit it: CI sets --junitxml there, and a run's last lines (which tests read)
    # would then end in "generated xml file", and every subprocess would overwrite CI's XML. They
    # get only the block of the plugin no test uses.
    os.environ["PYTEST_ADDOPTS"] = SUBPROCESS_ADDOPTS
    config.pluginmanager.register(SlowUnmarked(), "slow-unmarked")


# A test over this many seconds of call time should carry the slow marker (or e2e, live_model or docker, which
# imply it); the terminal summary names the ones that do not, so the quick suite stays quick.
SLOW_SECONDS = 10.0
IMPLY_SLOW = ("e2e", "live_model", "docker")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(name) for name in IMPLY_SLOW) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(xdist_group(item)))


def xdist_group(item: pytest.Item) -> str:
    """Which worker's share a test is in under `-n N --dist loadgroup` (the README's command 2): a
    module's tests stay together, so its module fixtures (a replayed run several tests read) run
    once; the live-model tests share one worker, so one embedded model is loaded, not one per worker,
    and the Docker tests another, so two Neo4j containers never compete for the engine."""
    if item.get_closest_marker("docker"):
        return "docker"
    module = item.nodeid.split("::", 1)[0]
    return "live" if module.startswith("tests/live/") else module


class SlowUnmarked:
    """Lists, after the run, the tests whose call took over SLOW_SECONDS without the slow marker."""

    def __init__(self) -> None:
        self.found: list[tuple[float, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" and report.duration > SLOW_SECONDS and "slow" not in report.keywords:
            self.found.append((report.duration, report.nodeid))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.found:
            terminalreporter.write_sep("-", f"over {SLOW_SECONDS:.0f} s without the slow marker (mark them slow)")
            for seconds, nodeid in sorted(self.found, reverse=True):
                terminalreporter.write_line(f"{seconds:7.1f}s {nodeid}")


@pytest.fixture(scope="session")
def neo4j_provider(tmp_path_factory: pytest.TempPathFactory):
    """The local provider (Neo4j 5.26 from the jars .ci/neo4j-jars.sh resolves), for the session's
    one shared server and for the tests that must start, kill or stop a server of their own."""
    from pytest_beam.services.local import LocalNeo4jProvider

    why = LocalNeo4jProvider.unavailable_reason()
    if why:
        pytest.skip(f"local Neo4j provider unavailable: {why}")
    return LocalNeo4jProvider(work_dir=tmp_path_factory.mktemp("neo4j"), heap="512m")


@pytest.fixture(scope="session")
def shared_neo4j(neo4j_provider):
    """ONE local Neo4j for every test that only needs a server to talk to (a JVM start costs
    seconds): the services room's integration tests and the memory room's ingest and agent tests
    share it, each leaving or cleaning its own data. Tests that kill or stop a server start their own."""
    service = neo4j_provider.create("shared")
    service.start()
    yield service
    service.stop()

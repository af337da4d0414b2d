"""The repo's own test wiring.

`pytester` runs pytest-beam sessions inside tests; BEAM_DATA points the tests at the offline
copy of the data (../shared/beam beside the repo in CI).

In CI (`CI=true`) a skipped test is a failure: on a laptop a test may skip for a missing
prerequisite (chromium, the live model, Neo4j's jars, the data), but CI installs them all, so a
skip there means a room went untested. Each skip is turned into a failure that keeps its reason,
and a skipped module (collection) fails the session with the list.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return str(report.longrepr)


class SkipsFailInCI:
    """Registered only when CI=true: a skipped test fails with its reason; a skipped module fails
    the session, listed in the terminal summary."""

    def __init__(self) -> None:
        self.skipped_modules: list[str] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if report.skipped and not hasattr(report, "wasxfail"):
            report.outcome = "failed"
            report.longrepr = f"skipped in CI (CI=true: every prerequisite must be installed): {skip_reason(report)}"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            self.skipped_modules.append(f"{report.nodeid}: {skip_reason(report)}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.skipped_modules:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.skipped_modules:
            terminalreporter.write_sep("=", "skipped in CI (CI=true): these modules were not run", red=True)
            for line in self.skipped_modules:
                terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    if in_ci():
        config.pluginmanager.register(SkipsFailInCI(), "skips-fail-in-ci")


@pytest.fixture(scope="session")
def beam_data_dir() -> Path:
    path = Path(os.environ.get("BEAM_DATA", "").strip() or REPO.parent / "shared" / "beam").resolve()  # empty: unset
    if not (path / "chats" / "100K").is_dir():
        pytest.fail(f"BEAM data not found at {path}: set BEAM_DATA to a copy in the upstream layout")
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO

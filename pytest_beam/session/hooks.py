"""The per-config plugin object of a BeamSession: the pytest hooks of a run that benchmarks.

Registered at configure only when the suite is on, so none of these hooks asks "is the suite
on"; it holds the run's plan, and from session start its session, so hooks that get no config
(`pytest_runtest_logreport`) reach it without module state (the shape of pytest-xdist's DSession
and syrupy's session object).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from . import question_items
from .plan import RunPlan
from .progress import show_line
from .state import SESSION_KEY, BeamSession

if TYPE_CHECKING:
    from collections.abc import Generator

    from xdist.workermanage import WorkerController

    from ..system import MemorySystem, SystemContext


class BeamSessionPlugin:
    """Holds the run's plan from configure and its session from session start (`start.py`)."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan
        self._session: BeamSession | None = None  # set once, by pytest_sessionstart

    @property
    def session(self) -> BeamSession:
        """The started session: every hook below but session start, finish and unconfigure runs after it."""
        if self._session is None:
            raise RuntimeError("pytest-beam: the session has not started (it starts at pytest_sessionstart)")
        return self._session

    @pytest.hookimpl(tryfirst=True)  # before xdist starts its workers: they need the endpoint
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from .start import start_session

        reporter = session.config.pluginmanager.getplugin("terminalreporter")
        self._session = start_session(self.plan, reporter)
        session.config.stash[SESSION_KEY] = self._session

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        question_items.parametrize(self.session, metafunc)

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, session: pytest.Session,
                                      items: list[pytest.Item]) -> Generator[None, None, None]:
        """The suite's items go in before every other implementation; after them all (pytest's
        fixture reordering, -k, -m and --lf included) a shard keeps its conversations' items and
        they are put back in (system, conversation, question) order."""
        question_items.add_question_items(self.session, session, items)
        result = yield
        question_items.keep_shard(self.session, session.config, items)
        question_items.order_items(items)
        return result


    def pytest_collection_finish(self, session: pytest.Session) -> None:
        embedded = self.session.endpoint.model is not None
        question_items.check_estimate(self.session, session, require_caps=not embedded)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """A dry run has printed its estimate (check_estimate): it runs no question."""
        return True if self.plan.settings.dry_run and not self.plan.is_worker else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        report = yield
        if item.nodeid.startswith(question_items.SUITE_NODEID + "::"):
            from .problems import shorten

            shorten(item, call, report)
        return report

    @pytest.hookimpl(tryfirst=True)  # before pytest's JUnit writer reads the report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self._session is not None:
            self._session.results.add_report(report)
        self._junit_classname(report)

    def _junit_classname(self, report: pytest.TestReport) -> None:
        """On the process that writes the XML (the xdist controller included), a question's test
        case is of class `beam.<ability>`, not `beam`, so a CI dashboard groups it by ability."""
        from _pytest.junitxml import xml_key  # no public way to set a test case's attributes

        xml = self.plan.config.stash.get(xml_key, None)
        if xml is None:
            return
        from .system_choice import junit_classname

        classname = junit_classname(report.nodeid)
        if classname is not None:
            xml.node_reporter(report).add_attribute("classname", classname)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: WorkerController) -> None:
        """xdist controller: every worker shares the run id, the cassette mode and load groups."""
        node.workerinput["beam_run_id"] = self.plan.run_id
        node.workerinput["beam_record_mode"] = self.plan.record_mode
        node.workerinput["beam_loadgroup"] = node.config.option.dist == "loadgroup"
        changes = self.session.endpoint.changes
        if changes:
            from .endpoint import WORKERINPUT_KEY

            node.workerinput[WORKERINPUT_KEY] = changes

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: object) -> object | None:
        from .scheduling import make_scheduler

        return make_scheduler(config, log)

    @pytest.hookimpl(trylast=True)  # after xdist has taken its workers down: their parts are final
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        beam = self._session
        if beam is None:
            return
        try:
            if not beam.is_worker and exitstatus != pytest.ExitCode.INTERRUPTED and not beam.terminate.received:
                self._judge_check(session)
            beam.models.halt()  # before the parts close and the record counts what was sent
            beam.close()
            beam.endpoint.stop()
            if beam.progress is not None:
                beam.progress.stop()
            if beam.is_worker:
                beam.results.persist()
            else:
                session.exitstatus = beam.results.finish(int(exitstatus))  # pytest returns this one
        finally:
            beam.endpoint.stop()
            beam.terminate.restore()

    def _judge_check(self, session: pytest.Session) -> None:
        """The judge's calibration on the questions that ran (``--beam-judge-check``), before the
        endpoint stops; a Ctrl-C here ends the check, never the record."""
        from .calibration_at_finish import SessionJudgeCheck, run_session_judge_check

        results = self.session.results
        reporter = session.config.pluginmanager.getplugin("terminalreporter")
        say = (lambda line: show_line(reporter, line)) if reporter is not None else (lambda line: None)
        try:
            beam = self.session
            results.judge_check = run_session_judge_check(beam.settings, beam.bench_set, lambda: beam.models.client,
                                                          results.ran(), say)
        except KeyboardInterrupt:
            results.judge_check = SessionJudgeCheck(error="interrupted before it finished")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._session is not None:
            self._session.endpoint.stop()  # a session that ended before pytest_sessionfinish

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self._session is not None and not self._session.is_worker:
            from .problems import write_section

            self._session.results.write_summary(terminalreporter)
            write_section(terminalreporter)


class GraphRAGProvider:
    """The built-in systems answer `pytest_beam_make_system` last, so any conftest wins."""

    @pytest.hookimpl(trylast=True)
    def pytest_beam_make_system(self, context: SystemContext) -> MemorySystem | None:
        from ..systems import make_system, system_names

        if context.system_name not in system_names():
            return None  # a custom name nobody built: Conversations.open says so
        return make_system(context.system_name, context)


def register(plan: RunPlan) -> None:
    """Wire a run's plan into its config: the hooks, the fixtures, the built-in memory system."""
    from . import fixtures

    manager = plan.config.pluginmanager
    manager.register(BeamSessionPlugin(plan), "beam-session")
    manager.register(fixtures, "beam-fixtures")
    manager.register(GraphRAGProvider(), "beam-graphrag")

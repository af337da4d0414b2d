"""Progress lines the user sees while a fixture runs: written by any process, printed by the controller."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .plan import RunPlan


def show_line(reporter: pytest.TerminalReporter, line: str) -> None:
    """A progress line, flushed: stdout redirected to a file (CI logs, `> run.log`) is
    block-buffered, and the line must be there while the step it describes runs."""
    reporter.write_line(line)
    reporter.flush()


class ProgressLines:
    """A progress line the user sees while a fixture runs, with or without xdist.

    An xdist worker appends it to the run's progress folder, which the controller prints
    (ProgressRelay); in one process, capture is suspended around the write.
    """

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan

    def __call__(self, line: str) -> None:
        plan = self.plan
        if plan.worker_id is not None:
            path = plan.run_dir / "progress" / f"{plan.worker_id}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(f"[{plan.worker_id}] {line}\n")
            return
        capture = plan.config.pluginmanager.getplugin("capturemanager")
        reporter = plan.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None:
            return
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            show_line(reporter, line)


class ProgressRelay:
    """On the xdist controller: print the workers' progress lines as they appear."""

    def __init__(self, folder: Path, reporter: pytest.TerminalReporter) -> None:
        self.folder, self.reporter = folder, reporter
        self.offsets: dict[Path, int] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="beam-progress", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(1.0):
            self.flush()

    def flush(self) -> None:
        for path in sorted(self.folder.glob("*.log")):
            offset = self.offsets.get(path, 0)
            with path.open(encoding="utf-8") as fh:
                fh.seek(offset)
                text = fh.read()
            complete = text[: text.rfind("\n") + 1]
            self.offsets[path] = offset + len(complete.encode("utf-8"))
            for line in complete.splitlines():
                show_line(self.reporter, line)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.flush()

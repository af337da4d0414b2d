"""On an xdist controller: print the workers' progress lines while their fixtures run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest


def show_line(reporter: pytest.TerminalReporter, line: str) -> None:
    """A progress line, flushed: stdout redirected to a file (CI logs, `> run.log`) is
    block-buffered, and the line must be there while the step it describes runs."""
    reporter.write_line(line)
    reporter.flush()


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

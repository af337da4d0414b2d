"""SIGTERM ends a run as Ctrl-C does, so pytest finishes the session and the record is written.

Without it, `kill PID` (or a CI job's cancel) ends the process at once: no record, no summary,
and the conversations' Neo4j processes left running. Installed for the session's lifetime, in
the main thread only (where Python runs signal handlers); a second SIGTERM while the session
finishes is ignored, so the record being written is not cut short.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any


class TerminateAsInterrupt:
    def __init__(self) -> None:
        self.received: str | None = None  # the signal's name, once one ended the run (the record says so)
        self.previous: Any = None
        self.installed = False

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self.previous = signal.signal(signal.SIGTERM, self._handle)
        self.installed = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        self.received = signal.Signals(signum).name
        raise KeyboardInterrupt(f"pytest-beam: {signal.Signals(signum).name} received")

    def restore(self) -> None:
        if self.installed:
            signal.signal(signal.SIGTERM, self.previous if self.previous is not None else signal.SIG_DFL)
            self.installed = False

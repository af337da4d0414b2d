"""The one `BeamSession` of a pytest config: settings, question set, collector, runtime, cassette mode.

It is built in `pytest_configure` when the suite is wanted and kept on the config's stash; the
per-config plugin object (`hooks.BeamSessionPlugin`) holds it too, so hooks that receive no
config (`pytest_runtest_logreport`) still reach it without any module-level state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..settings import Settings
from ..systems import DEFAULT_SYSTEM

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from .collector import RunCollector
    from .progress import ProgressRelay
    from .runtime import Runtime

STASH_KEY: pytest.StashKey[BeamSession] = pytest.StashKey()


@dataclass
class BeamSession:
    config: pytest.Config
    settings: Settings
    worker_id: str | None  # None on the xdist controller or without xdist
    run_id: str
    run_dir: Path
    record_mode: str = "off"  # the cassette mode in effect (decided once, on the controller)
    bench_set: BenchmarkSet | None = None
    collector: RunCollector | None = None
    runtime: Runtime | None = None  # built by the first fixture that needs it
    progress: ProgressRelay | None = None  # on an xdist controller only
    started: float = field(default_factory=time.time)
    systems: list[str] = field(default_factory=lambda: [DEFAULT_SYSTEM])  # --beam-system, checked at session start

    @property
    def is_worker(self) -> bool:
        return self.worker_id is not None

    @property
    def process_name(self) -> str:
        """This process's name in the run folder's per-process files."""
        return self.worker_id or "main"

    def require_bench_set(self) -> BenchmarkSet:
        """The question set, which collection loads before any question (or its runtime) runs."""
        if self.bench_set is None:
            raise RuntimeError("pytest-beam: the question set is not loaded yet (it is, at collection)")
        return self.bench_set

    def require_collector(self) -> RunCollector:
        """The run's collector, which the session plugin makes at session start."""
        if self.collector is None:
            raise RuntimeError("pytest-beam: the run's collector is not made yet (it is, at session start)")
        return self.collector

    def get_runtime(self) -> Runtime:
        """This process's live parts, built on first use (no JVM or openai before a question runs)."""
        if self.runtime is None:
            from .runtime import Runtime

            self.runtime = Runtime(self)
        return self.runtime


def get_session(config: pytest.Config) -> BeamSession | None:
    """The config's BeamSession, or None when the suite is off in this run."""
    return config.stash.get(STASH_KEY, None)

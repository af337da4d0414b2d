"""What a pytest config asks of the benchmark, decided once at configure (`configure.py`): the `RunPlan`.

A leaf of the session: every part of the session reads the plan (its run folder, its process's
place in the run), and the plan names none of them, so no part's module and the plan's import
each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ..settings import Settings


@dataclass(frozen=True)
class RunPlan:
    """What this pytest config asks of the benchmark, decided at configure."""

    config: pytest.Config
    settings: Settings  # as configured (a worker's carry the controller's model endpoint already)
    worker_id: str | None  # None on the xdist controller or without xdist
    run_id: str
    run_dir: Path
    record_mode: str = "off"  # the cassette mode in effect (decided once, on the controller)

    @property
    def is_worker(self) -> bool:
        return self.worker_id is not None

    @property
    def process_name(self) -> str:
        """This process's name in the run folder's per-process files."""
        return self.worker_id or "main"

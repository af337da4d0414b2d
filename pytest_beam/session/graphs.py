"""This process's graph services: one Neo4j per system run on a conversation, started when its system asks.

The provider (docker, a local JVM, an existing server: `services.select_provider`) is chosen on
the first start, so a run whose systems need no graph never picks one, and nothing starts
before a system calls `SystemContext.start_neo4j()`. The harness stops each service with its
conversation (`conversations.py`) and every one left at the session's end.

A local Neo4j's home (its store, its logs) lives under the temporary folder (TMPDIR), in a folder
of the run's id, never under --beam-results: a store that fills the results disk would take the
record with it, and a full results disk would stop every Neo4j (issue 43). The controller removes
the run's folder at the end, with what a killed worker left there.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..services import Neo4jConnection, Neo4jProvider, Neo4jService
    from ..settings import Settings
    from .plan import RunPlan


class GraphServices:
    """The Neo4j services of this process, by run key (`Conversations.run_key`)."""

    def __init__(self, plan: RunPlan, settings: Settings, say: Callable[[str], None]) -> None:
        self.plan, self.settings, self.say = plan, settings, say
        self.services: dict[str, Neo4jService] = {}
        self.connections: dict[str, Neo4jConnection] = {}
        self._provider: Neo4jProvider | None = None

    def _chosen_provider(self) -> Neo4jProvider:
        if self._provider is None:
            from ..services import select_provider

            self._provider = select_provider(self.settings.neo4j, work_dir=self.homes,
                                             start_timeout_s=self.settings.neo4j_start_timeout)
            if chosen := getattr(self._provider, "selection_note", None):
                self.say(chosen)  # auto fell back (e.g. an engine without the pinned image)
            note = getattr(self._provider, "first_use_note", None)
            if note is not None and (line := note()):
                self.say(line)  # minutes of Maven before the first start, once per machine
        return self._provider

    def start(self, key: str, service_name: str | None = None, procedures: Sequence[str] = ()) -> Neo4jConnection:
        """Start the run's Neo4j once, with the plugin procedures its system calls (services/procedures.py);
        the harness stops it with the conversation."""
        if key not in self.services:
            provider = self._chosen_provider()
            service = provider.create(service_name or f"conv{key}", procedures)
            self.services[key] = service
            self.connections[key] = service.start()
        return self.connections[key]

    def stop(self, key: str) -> None:
        service = self.services.pop(key, None)
        self.connections.pop(key, None)
        if service is not None:
            service.stop()

    def stop_all(self) -> None:
        for key in list(self.services):
            self.stop(key)

    @property
    def homes(self) -> Path:
        """Where this run's local Neo4j homes live: the temporary folder, never the results disk."""
        return Path(tempfile.gettempdir()) / "pytest-beam-neo4j" / self.plan.run_id

    def remove_homes(self) -> None:
        """On the controller once every worker is down: the run's Neo4j homes, a killed worker's included."""
        import os

        if not os.environ.get("BEAM_KEEP_NEO4J_DIRS"):
            shutil.rmtree(self.homes, ignore_errors=True)

"""The interface every Neo4j provider implements: one service (one graph) per conversation.

A *provider* knows how to get Neo4j servers (``local`` JVM process, ``docker`` container through
testcontainers, or an ``external`` server reached by a bolt URI). ``provider.create(label)`` gives a
:class:`Neo4jService` for one conversation; ``service.start()`` returns the
:class:`Neo4jConnection` to use, ``service.stop()`` releases everything it started.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field


class Neo4jServiceError(Exception):
    """An infrastructure failure of the Neo4j layer. The message names the cause and the fix.

    ``label`` is the conversation label of the service concerned (``""`` when the error is not
    about one service, e.g. no provider is available), so a caller can fail only the questions
    of that conversation.
    """

    def __init__(self, message: str, *, label: str = "") -> None:
        super().__init__(message)
        self.label = label


class Neo4jServiceDown(Neo4jServiceError):
    """The service of one conversation stopped answering (its JVM/container died, or the network
    to an external server went away). Raised by :mod:`pytest_beam.services.access`."""


@dataclass(frozen=True)
class Neo4jConnection:
    """Where one conversation's graph lives. ``repr`` never shows the password."""

    uri: str
    user: str
    password: str = field(repr=False)
    database: str
    label: str = ""

    @property
    def auth(self) -> tuple[str, str]:
        return (self.user, self.password)


class Neo4jService(ABC):
    """One Neo4j graph for one conversation. ``start`` and ``stop`` hold ``_lock``: the harness
    may stop a service from another thread while it starts."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._connection: Neo4jConnection | None = None
        self._lock = threading.RLock()

    @abstractmethod
    def start(self) -> Neo4jConnection:
        """Start (or claim) the graph and return once a real Bolt query has answered."""

    @abstractmethod
    def stop(self) -> None:
        """Release everything ``start`` acquired. Idempotent; never raises for an already dead
        service."""

    @abstractmethod
    def is_alive(self) -> bool:
        """True while the server answers (for ``local``: while the JVM process runs)."""

    @abstractmethod
    def log_tail(self, lines: int = 50) -> str:
        """The last lines of the server's log, for error messages ('' when unknown)."""

    @property
    def connection(self) -> Neo4jConnection | None:
        """The connection returned by ``start`` (None before)."""
        return getattr(self, "_connection", None)

    def __enter__(self) -> Neo4jConnection:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Neo4jProvider(ABC):
    """A way to obtain Neo4j services: ``local``, ``docker`` or ``external``."""

    name: str
    selection_note: str | None = None
    """One line for the user about why ``auto`` chose this provider (None: nothing to say)."""

    @abstractmethod
    def create(self, label: str, procedures: Sequence[str] = ()) -> Neo4jService:
        """A new, not yet started service for the conversation ``label`` (e.g. ``"conv17"``);
        ``procedures`` are plugin procedures its system calls (``procedures.py``): the service
        provides them where it can, and its start fails with one line where it cannot."""

    def describe(self) -> str:
        """One line for the session header."""
        return self.name

"""The ``external`` provider: an existing Neo4j 5 server given by a bolt URI.

Credentials come from ``BEAM_NEO4J_USER`` (default ``neo4j``) and ``BEAM_NEO4J_PASSWORD``.

Isolation it gives
------------------
* **Enterprise / Aura** (several databases per server): one database per conversation,
  ``beam-<label>`` (``CREATE DATABASE ... IF NOT EXISTS``; Neo4j 5 database names allow letters,
  digits, dots and dashes, not underscores). Conversations do not see each other's graphs.
  The databases are left in place at stop (drop them with ``DROP DATABASE `beam-conv17```); a
  later run wipes and rebuilds them (no graph is reused between runs).
* **Community** (one user database): every conversation uses the default database, so there is
  no isolation between conversations. One conversation at a time per server: this process
  refuses a second concurrent service on the same database, and other processes (xdist workers,
  other users) must not share it. Run without ``-n`` against a Community server, or use
  Enterprise/Aura, or the local/docker providers.

Ownership and wiping
--------------------
The plugin only ever wipes a database it owns. It owns one when it finds its marker node
``(:BeamOwner {token, label})`` in it; it writes that marker when it claims a database that is
completely empty (no nodes, no constraints, no indexes other than Neo4j's built-in lookup
indexes). A database with data or schema but no marker is someone else's: :meth:`start` raises
:class:`Neo4jServiceError` and touches nothing. ``start`` wipes an owned database (all nodes but
the marker, all constraints and indexes) so every run starts from an empty graph.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .access import open_driver, run_autocommit, run_read, run_write
from .base import Neo4jConnection, Neo4jProvider, Neo4jService, Neo4jServiceError
from .procedures import require_procedures

BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
MARKER_LABEL = "BeamOwner"


def is_bolt_uri(spec: str) -> bool:
    return urlsplit(spec).scheme.lower() in BOLT_SCHEMES and "://" in spec


def database_name_for(label: str) -> str:
    """``beam-<label>``, lower case, only the characters Neo4j 5 allows in a database name."""
    name = "beam-" + re.sub(r"[^a-z0-9.-]+", "-", label.lower()).strip("-.")
    return name[:63]


def _redacted(uri: str) -> str:
    parts = urlsplit(uri)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


class ExternalNeo4jProvider(Neo4jProvider):
    name = "external"

    def __init__(
        self,
        uri: str,
        *,
        user: str | None = None,
        password: str | None = None,
        multi_database: bool | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        if not is_bolt_uri(uri):
            raise Neo4jServiceError(f"not a bolt URI: {uri!r} (expected one of {', '.join(BOLT_SCHEMES)})")
        self.uri = uri
        self.user = user or os.environ.get("BEAM_NEO4J_USER") or "neo4j"
        pw = password if password is not None else os.environ.get("BEAM_NEO4J_PASSWORD")
        if not pw:
            raise Neo4jServiceError(
                f"--beam-neo4j={_redacted(uri)} needs the server's password in BEAM_NEO4J_PASSWORD "
                "(and the user in BEAM_NEO4J_USER, default neo4j)."
            )
        self.password = pw
        self.timeout_s = timeout_s
        self._multi = multi_database
        self._active: set[str] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ExternalNeo4jProvider(uri={_redacted(self.uri)!r}, user={self.user!r})"

    def describe(self) -> str:
        mode = {True: "one database per conversation", False: "the default database", None: "?"}[self._multi]
        return f"external ({_redacted(self.uri)}, {mode})"

    def _conn(self, database: str, label: str) -> Neo4jConnection:
        return Neo4jConnection(self.uri, self.user, self.password, database, label)

    def multi_database(self, driver: Any) -> bool:
        """True for Enterprise/Aura (CREATE DATABASE works), False for Community."""
        with self._lock:
            if self._multi is None:
                records = run_autocommit(driver, "system", "CALL dbms.components() YIELD edition RETURN edition")
                edition = (records[0]["edition"] if records else "community") or "community"
                self._multi = edition.lower() != "community"
            return self._multi

    def _acquire(self, database: str, label: str) -> None:
        with self._lock:
            if database in self._active:
                raise Neo4jServiceError(
                    f"database {database!r} on {_redacted(self.uri)} is already in use by another "
                    f"conversation of this run (the server has a single database: run "
                    "conversations one at a time, or use Enterprise/Aura, docker or local).",
                    label=label,
                )
            self._active.add(database)

    def _release(self, database: str) -> None:
        with self._lock:
            self._active.discard(database)

    def create(self, label: str, procedures: Sequence[str] = ()) -> ExternalNeo4jService:
        return ExternalNeo4jService(self, label, procedures)


class ExternalNeo4jService(Neo4jService):
    def __init__(self, provider: ExternalNeo4jProvider, label: str, procedures: Sequence[str] = ()) -> None:
        super().__init__(label)
        self.provider = provider
        self.procedures = tuple(procedures)
        self.database: str | None = None
        self.token: str | None = None
        self._driver: Any = None

    def start(self) -> Neo4jConnection:
        from neo4j.exceptions import DriverError, Neo4jError

        with self._lock:
            if self._connection is not None:
                return self._connection
            p = self.provider
            driver = open_driver(p._conn("system", self.label))
            acquired = None
            try:
                driver.verify_connectivity()
                if p.multi_database(driver):
                    database = database_name_for(self.label)
                    run_autocommit(driver, "system",
                                   f"CREATE DATABASE `{database}` IF NOT EXISTS WAIT {int(p.timeout_s)} SECONDS")
                else:
                    records = run_autocommit(driver, "system", "SHOW DEFAULT DATABASE YIELD name RETURN name")
                    database = records[0]["name"] if records else "neo4j"
                p._acquire(database, self.label)
                acquired = database
                self.database = database
                self._driver = driver
                self.token = self._claim()
                self.wipe()
                require_procedures(p._conn(database, self.label), self.procedures,
                                   f"the Neo4j server at {_redacted(p.uri)}")
            except Neo4jServiceError:
                self._abort(driver, acquired)
                raise
            except (Neo4jError, DriverError, OSError) as exc:
                self._abort(driver, acquired)
                raise Neo4jServiceError(
                    f"external Neo4j {_redacted(p.uri)} for {self.label!r}: {type(exc).__name__}: {exc}",
                    label=self.label,
                ) from None
            self._connection = p._conn(database, self.label)
            return self._connection

    def _abort(self, driver: Any, acquired: str | None) -> None:
        if acquired:
            self.provider._release(acquired)
        self._driver = None
        driver.close()

    def _claim(self) -> str:
        """Own the database: reuse our marker, or write one into an empty database; refuse a
        database that holds anything without our marker."""
        d, db = self._driver, self.database
        owners = run_read(d, db, f"MATCH (o:{MARKER_LABEL}) RETURN o.token AS token LIMIT 1", {})
        if owners and owners[0]["token"]:
            token = owners[0]["token"]
            run_write(d, db, f"MATCH (o:{MARKER_LABEL} {{token: $token}}) SET o.label = $label, "
                      "o.claimed_at = datetime()", {"token": token, "label": self.label})
            return token
        foreign = self._foreign_content()
        if foreign:
            raise Neo4jServiceError(
                f"Refusing to use database {db!r} on {_redacted(self.provider.uri)} for "
                f"{self.label!r}: it is not empty ({foreign}) and has no (:{MARKER_LABEL}) marker, "
                "so pytest-beam did not create it and will not wipe it. Point --beam-neo4j at a "
                "server (or an empty database) the plugin may own, or use Enterprise/Aura where "
                "it creates one database per conversation.",
                label=self.label,
            )
        token = secrets.token_hex(16)
        run_write(d, db, f"CREATE (:{MARKER_LABEL} {{token: $token, label: $label, created_by: 'pytest-beam', "
                  "created_at: datetime(), claimed_at: datetime()})", {"token": token, "label": self.label})
        return token

    def _foreign_content(self) -> str:
        d, db = self._driver, self.database
        nodes = run_read(d, db, "MATCH (n) RETURN count(n) AS c", {})
        if nodes and nodes[0]["c"]:
            return f"{nodes[0]['c']} nodes"
        schema = self._schema_items()
        if schema:
            return f"schema: {', '.join(name for _, name in schema[:5])}"
        return ""

    def _schema_items(self) -> list[tuple[str, str]]:
        d, db = self._driver, self.database
        cons = run_autocommit(d, db, "SHOW CONSTRAINTS YIELD name RETURN name")
        idx = run_autocommit(d, db, "SHOW INDEXES YIELD name, type, owningConstraint "
                             "WHERE type <> 'LOOKUP' AND owningConstraint IS NULL RETURN name")
        return [("CONSTRAINT", r["name"]) for r in cons] + [("INDEX", r["name"]) for r in idx]

    def wipe(self) -> None:
        """Delete everything but the marker (nodes, constraints, indexes). Refuses a database
        without this plugin's marker."""
        with self._lock:
            if self._driver is None or self.token is None:
                raise Neo4jServiceError("wipe() before start()", label=self.label)
            d, db = self._driver, self.database
            mine = run_read(d, db, f"MATCH (o:{MARKER_LABEL} {{token: $token}}) RETURN count(o) AS c",
                            {"token": self.token})
            if not mine or not mine[0]["c"]:
                raise Neo4jServiceError(
                    f"Refusing to wipe {db!r}: its (:{MARKER_LABEL}) marker is gone.", label=self.label
                )
            run_autocommit(d, db, f"MATCH (n) WHERE NOT n:{MARKER_LABEL} "  # IN TRANSACTIONS: auto-commit
                           "CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS")
            for kind, name in self._schema_items():
                run_autocommit(d, db, f"DROP {kind} `{name}` IF EXISTS")

    def stop(self) -> None:
        with self._lock:
            driver, self._driver = self._driver, None
            self._connection = None
            if self.database:
                self.provider._release(self.database)
            if driver is not None:
                driver.close()

    def is_alive(self) -> bool:
        if self._driver is None:
            return False
        try:
            self._driver.verify_connectivity()
            return True
        except Exception:  # noqa: BLE001
            return False

    def log_tail(self, lines: int = 50) -> str:
        return f"(external server {_redacted(self.provider.uri)}: its log is not reachable from here)"

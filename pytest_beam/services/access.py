"""The one way to a conversation's graph: every Cypher statement the product runs goes through here.

Ingest's writes and reads (``memory/store.py``), the schema (``memory/graph_schema.py``), the
agent's tools and search (``memory/tools.py``, ``memory/search.py``), the read-only Cypher tool,
the external provider's bookkeeping and the benches call :func:`run_read`, :func:`run_write` or
:func:`run_autocommit`; this module owns the sessions, the access mode, timeouts, row caps and the
translation of a dead server into :class:`~pytest_beam.services.base.Neo4jServiceDown`.

:func:`run_read` runs in a READ transaction (session access mode READ + ``execute_read``), so the
*server* refuses any write (``Neo.ClientError.Statement.AccessMode``), with a server-side
transaction timeout and a row cap. :data:`AGENT_READS` are the limits of every agent read.

When the server behind a driver goes away (its JVM killed, container gone, network down) both
functions raise :class:`~pytest_beam.services.base.Neo4jServiceDown` carrying the conversation
``label`` of the connection the driver was opened for, so the caller can error only that
conversation's questions. Every other Neo4j error (syntax, access mode, timeout, constraint)
comes through unchanged as the driver's ``neo4j.exceptions.Neo4jError``: it is the query's fault,
not the service's.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from .base import Neo4jConnection, Neo4jServiceDown

if TYPE_CHECKING:
    import neo4j

_CONNECTIONS: weakref.WeakKeyDictionary[Any, Neo4jConnection] = weakref.WeakKeyDictionary()


def open_driver(
    conn: Neo4jConnection,
    *,
    retry_time_s: float = 5.0,
    connection_timeout_s: float = 5.0,
    **config: Any,
) -> neo4j.Driver:
    """A driver for ``conn``. Retries of a failed transaction are capped at ``retry_time_s``
    (the driver's default is 30 s, too long to notice a dead service), connects time out after
    ``connection_timeout_s``. Extra keyword arguments go to ``GraphDatabase.driver``."""
    import neo4j

    config.setdefault("max_transaction_retry_time", retry_time_s)
    config.setdefault("connection_timeout", connection_timeout_s)
    config.setdefault("connection_acquisition_timeout", max(10.0, connection_timeout_s * 2))
    config.setdefault("user_agent", "pytest-beam")
    driver = neo4j.GraphDatabase.driver(conn.uri, auth=conn.auth, **config)
    _CONNECTIONS[driver] = conn
    return driver


def connection_of(driver: Any) -> Neo4jConnection | None:
    """The connection ``driver`` was opened for by :func:`open_driver` (None otherwise)."""
    try:
        return _CONNECTIONS.get(driver)
    except TypeError:
        return None


@dataclass(frozen=True)
class ReadLimits:
    """How long one read may run on the server and how many rows it may bring back."""

    timeout_s: float | None = 10.0
    max_rows: int | None = 1000


#: Every read the agent's tools make (search, statements, timeline, rules, messages): the Cypher
#: tool shows fewer rows (its own cap) but runs under the same timeout.
AGENT_READS = ReadLimits(timeout_s=10.0, max_rows=10_000)
#: Ingest reads the whole graph it wrote, without a row cap or a timeout.
UNBOUNDED = ReadLimits(timeout_s=None, max_rows=None)


class QueryRefused(Exception):
    """The server's plan of a query failed the caller's plan check (a command, a procedure,
    ``LoadCSV`` or a deep variable-length expand for the agent's Cypher): the query was planned
    (``EXPLAIN``), never run."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


#: Called with the plan's steps and its query type ('r', 'rw', 'w', 's'; '' when not given).
PlanCheck = Callable[[list[tuple[str, str]], str], "str | None"]


def plan_steps(plan: Any) -> list[tuple[str, str]]:
    """(operator, details) of every step of a plan tree from the driver, operator names without
    their runtime suffix (``LoadCSV@neo4j`` -> ``LoadCSV``)."""
    if not plan:
        return []
    args = plan.get("args") or plan.get("arguments") or {}
    steps = [(str(plan.get("operatorType", "")).split("@")[0], str(args.get("Details", "")))]
    for child in plan.get("children") or ():
        steps += plan_steps(child)
    return steps


#: One row of a Cypher result (``record.data()``): the query's columns by name; and one row a write
#: query unwinds (``UNWIND $rows AS row``): the properties it sets. Open by nature: each query
#: chooses its columns and properties, and Neo4j's values are what the query returns or stores
#: (numbers, text, lists, maps, nodes as maps); the query's code reads the columns it asked for.
CypherRow: TypeAlias = dict[str, Any]
#: A query's parameters by name. Open by nature: each query names its own, and the driver takes
#: scalars, lists and maps (a write's rows are CypherRow maps).
CypherParams: TypeAlias = dict[str, Any]


class ReadResult(list[CypherRow]):
    """The rows of :func:`run_read` (a ``list`` of ``dict``) plus ``truncated``: True when the
    query had more than ``max_rows`` rows and the rest were dropped."""

    truncated: bool = False

    def __init__(self, rows: list[CypherRow] = (), truncated: bool = False) -> None:  # type: ignore[assignment]
        super().__init__(rows)
        self.truncated = truncated


def _down_error(driver: Any, database: str | None, exc: BaseException) -> Neo4jServiceDown:
    conn = connection_of(driver)
    label = conn.label if conn else ""
    where = f"{conn.uri} (conversation {label!r}, database {database or conn.database!r})" if conn else "the server"
    return Neo4jServiceDown(
        f"Neo4j service at {where} stopped answering: {type(exc).__name__}: {exc}. "
        "Its process or container may have died; the questions of this conversation cannot run.",
        label=label,
    )


def _service_failures() -> tuple[type[BaseException], ...]:
    from neo4j.exceptions import ServiceUnavailable, SessionExpired

    return (ServiceUnavailable, SessionExpired, ConnectionError)


def run_read(
    driver: neo4j.Driver,
    database: str | None,
    cypher: str,
    params: Mapping[str, Any] | None = None,
    *,
    timeout_s: float | None = 10.0,
    max_rows: int | None = 1000,
    plan_check: PlanCheck | None = None,
    retry: bool = True,
) -> ReadResult:
    """Run ``cypher`` in a READ transaction; the server refuses writes and stops it after
    ``timeout_s``. Returns at most ``max_rows`` rows as dicts (``.truncated`` says if cut;
    ``None``: no cap). The server's notifications are off: a young graph warns about labels
    it has not seen yet, which is expected. With ``plan_check`` the query is first planned
    (``EXPLAIN``, in the same transaction) and :class:`QueryRefused` raised, without running it,
    when the check returns a reason: what the server would do decides, not how it is spelled.
    ``retry=False`` runs it once (the agent's own queries: a query that ran out of memory is a
    transient error to the driver, and running it again would only fill the heap again)."""
    import neo4j

    if max_rows is not None and max_rows < 0:
        raise ValueError("max_rows must be >= 0")

    @neo4j.unit_of_work(timeout=timeout_s)
    def work(tx: neo4j.ManagedTransaction | neo4j.Transaction) -> ReadResult:  # retried or not
        if plan_check is not None:
            planned = tx.run("EXPLAIN " + cypher, dict(params or {})).consume()
            reason = plan_check(plan_steps(planned.plan), planned.query_type or "")
            if reason:
                raise QueryRefused(reason)
        result = tx.run(cypher, dict(params or {}))
        rows: list[CypherRow] = []
        truncated = False
        for record in result:
            if max_rows is not None and len(rows) >= max_rows:
                truncated = True
                break
            rows.append(record.data())
        return ReadResult(rows, truncated)

    try:
        with driver.session(
            database=database,
            default_access_mode=neo4j.READ_ACCESS,
            fetch_size=1000 if max_rows is None else max(1, min(max_rows + 1, 1000)),
            notifications_min_severity="OFF",
        ) as session:
            if retry:
                return session.execute_read(work)
            with session.begin_transaction(timeout=timeout_s) as tx:
                return work(tx)
    except _service_failures() as exc:
        raise _down_error(driver, database, exc) from exc


class WriteResult(list[CypherRow]):
    """The rows of :func:`run_write` plus ``counters`` (nodes_created, properties_set, ...)."""

    def __init__(self, rows: list[CypherRow] = (), counters: dict[str, int] | None = None) -> None:  # type: ignore[assignment]
        super().__init__(rows)
        self.counters = counters or {}


def run_write(
    driver: neo4j.Driver,
    database: str | None,
    cypher: str,
    params: Mapping[str, Any] | None = None,
    *,
    timeout_s: float | None = None,
) -> WriteResult:
    """Run ``cypher`` in a WRITE transaction (retried by the driver on transient errors)."""
    import neo4j

    @neo4j.unit_of_work(timeout=timeout_s)
    def work(tx: neo4j.ManagedTransaction) -> WriteResult:
        result = tx.run(cypher, dict(params or {}))
        rows = [r.data() for r in result]
        counters = result.consume().counters
        return WriteResult(
            rows,
            {k: v for k, v in vars(counters).items() if isinstance(v, int) and not k.startswith("_")},
        )

    try:
        with driver.session(database=database, default_access_mode=neo4j.WRITE_ACCESS,
                            notifications_min_severity="OFF") as session:
            return session.execute_write(work)
    except _service_failures() as exc:
        raise _down_error(driver, database, exc) from exc


def run_autocommit(
    driver: neo4j.Driver,
    database: str | None,
    cypher: str,
    params: Mapping[str, Any] | None = None,
) -> list[CypherRow]:
    """Run ``cypher`` as an auto-commit query, for what a managed transaction cannot hold:
    ``CALL {...} IN TRANSACTIONS`` and administration (``CREATE DATABASE``). Not retried."""
    try:
        with driver.session(database=database, notifications_min_severity="OFF") as session:
            return [record.data() for record in session.run(cypher, dict(params or {}))]
    except _service_failures() as exc:
        raise _down_error(driver, database, exc) from exc

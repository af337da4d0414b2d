"""The agent's read-only Cypher tool: its query is the agent's own, so the server must bound it.

The query runs through :func:`pytest_beam.services.access.run_read`: a READ transaction (the
server refuses writes), the agent's timeout and this tool's row cap, and is planned first. Only a
plain read of the graph runs: the plan's query type must be 'r', with no command operator (SHOW
or TERMINATE TRANSACTIONS plan as reads, and a READ transaction runs them: one agent could end
another session's write on a shared server) and no procedure outside :data:`READ_PROCEDURES`
(``db.clearQueryCaches()`` runs in a READ transaction too); a plan that would load CSV, or expand
variable-length paths deeper than the graph needs, is refused before anything runs. A mistake in the query
(syntax, a refused write, a timeout) comes back to the agent as text; a dead server raises.
"""

from __future__ import annotations

import re
from typing import Any

from ..services.access import QueryRefused, run_read
from .tool_render import ToolJson, ToolResult, bounded, collect_message_ids, cut, plain

#: Procedures the agent may call: they read this database's graph or its schema, nothing else.
READ_PROCEDURES = frozenset({
    "db.index.fulltext.queryNodes", "db.index.fulltext.queryRelationships", "db.index.vector.queryNodes",
    "db.labels", "db.relationshipTypes", "db.propertyKeys", "db.schema.visualization",
    "db.schema.nodeTypeProperties", "db.schema.relTypeProperties",
})
#: Command operators (SHOW ..., TERMINATE ..., administration) are not reads of the graph, whatever
#: query type the server gives them (SHOW/TERMINATE TRANSACTIONS plan as 'r').
_COMMAND = re.compile(r"^(Show|Terminate)[A-Z]|^AdministrationCommand$|^SystemProcedureCall$")
#: Operators refused by plan: LoadCSV makes the server fetch a URL or read a file, whatever the
#: query's spelling (``LOAD/**/CSV``, inside ``CALL {}``); the local server blocks it too.
REFUSED_OPERATORS = frozenset({"LoadCSV"})
#: Deepest variable-length expand allowed. The graph's longest useful chain is entity -> statement
#: -> entity -> statement -> message; deeper (or unbounded) expands only enumerate paths, and the
#: server does not always check the transaction's timeout while it projects them (a full run's
#: agent question hung for over ten minutes on ``MATCH p=(a)-[*1..30]-(b) RETURN count(p)``).
MAX_HOPS = 4
#: range() builds a list the server's memory tracking does not see: one read-only
#: ``[x IN range(1, 40000000) | x]`` filled the heap, and on a loaded machine the out-of-memory
#: error hit the Bolt event loop instead of the query, leaving the server up but deaf. Planned
#: details spell it ``range(`` whatever the query's spelling (``RaNgE/**/(``), literals hidden as
#: parameters, so any range() is refused: reading a memory graph never needs one.
_RANGE = re.compile(r"\brange\(")
_EXPANDS = ("VarLengthExpand", "Repeat", "Trail")
_HOPS = re.compile(r"\[[^\[\]]*?\*\s*(\d*)\s*(\.\.\s*(\d*))?\s*\]"  # -[r:T*1..3]-
                   r"|\)\s*\{\s*(\d*)\s*(,\s*(\d*))?\s*\}"  # ((a)-->(b)){1,3}
                   r"|\)\s*([+*])\s*\(")  # ((a)-->(b))+ (c)


def _deepest(details: str) -> float:
    """The largest upper bound on hops written in an expand's plan details (inf when unbounded)."""
    deepest = 0.0
    for star_lo, star_range, star_hi, q_lo, q_range, q_hi, plus in _HOPS.findall(details):
        if plus:
            return float("inf")
        if star_range or q_range:
            hi = star_hi if star_range else q_hi
        elif details and (star_lo or q_lo):
            hi = star_lo or q_lo
        else:
            hi = ""  # a bare `*`
        if not hi:
            return float("inf")
        deepest = max(deepest, float(hi))
    return deepest


def refusal(steps: list[tuple[str, str]], query_type: str = "r") -> str | None:
    """Why the agent's query may not run, from what the server planned (None: it may)."""
    if query_type in ("rw", "w"):
        return "writes are not allowed here (this tool is read-only: writes are refused)."
    commands = sorted({op for op, _ in steps if _COMMAND.search(op)})
    if commands:
        return (f"commands ({', '.join(commands)}) are not allowed here: this tool reads the graph only "
                "(use MATCH ... RETURN).")
    for op, details in steps:
        name = details.split("(", 1)[0].strip()
        if op == "ProcedureCall" and name not in READ_PROCEDURES:
            return (f"the procedure {name or details!r} is not allowed here: this tool reads the graph only "
                    f"(allowed: {', '.join(sorted(READ_PROCEDURES))}).")
    if query_type != "r":
        return (f"only plain reads of the graph are allowed here (the server planned this query as "
                f"type {query_type or 'unknown'!r}, not a read).")
    if any(op in REFUSED_OPERATORS for op, _ in steps):
        return "LOAD CSV is not allowed here (this tool reads the graph only)."
    if any(_RANGE.search(details) for _, details in steps):
        return ("range() is not allowed here: it builds lists outside the server's memory limits "
                "(this tool reads the graph; it does not compute).")
    for op, details in steps:
        if op.startswith(_EXPANDS) and _deepest(details) > MAX_HOPS:
            return (f"variable-length patterns deeper than {MAX_HOPS} hops (or unbounded) are not allowed "
                    f"here; bound the pattern (e.g. -[*1..{MAX_HOPS}]-) or use the graph tools.")
    return None


def run_cypher_tool(driver: Any, database: str, query: str, *, timeout_s: float | None, max_rows: int,
                    max_result_chars: int, value_chars: int) -> ToolResult:
    """Run the agent's ``query`` read-only and render its rows (or its error) for the agent."""
    try:
        rows = run_read(driver, database, query, {}, timeout_s=timeout_s, max_rows=max_rows,
                        plan_check=refusal, retry=False)
    except QueryRefused as refused:
        return ToolResult(f"Cypher error: {refused.reason}", is_error=True)
    except Exception as exc:  # noqa: BLE001 - classified below
        if not _is_query_error(exc):
            raise
        return ToolResult(_cypher_error_text(exc), is_error=True)
    items = [plain(row, value_chars) for row in rows]
    columns = list(rows[0].keys()) if rows else []
    header: ToolJson = {"columns": columns}
    if getattr(rows, "truncated", False):
        header["truncated"] = f"only the first {len(rows)} rows are shown (row cap)"
    text, shown = bounded(header, items, max_result_chars, "rows")
    ids: set[int] = set()
    collect_message_ids(shown, ids)
    return ToolResult(text, sorted(ids))


def _is_query_error(exc: BaseException) -> bool:
    """A mistake in the agent's query (syntax, a refused write, a timeout) rather than a fault
    of the infrastructure (database down), which must propagate."""
    import neo4j.exceptions as ne

    if isinstance(exc, (ne.ServiceUnavailable, ne.SessionExpired, ne.AuthError)):
        return False
    return isinstance(exc, (ne.Neo4jError, ne.ResultError,
                            TypeError, ValueError))


def _cypher_error_text(exc: BaseException) -> str:
    code = getattr(exc, "code", None) or type(exc).__name__
    message = getattr(exc, "message", None) or str(exc)
    message = " ".join(str(message).split())
    if "AccessMode" in str(code) or "read access mode" in message.lower() or "read-only" in message.lower():
        hint = " (this tool is read-only: writes are refused)"
    elif "timedout" in str(code).lower() or "timeout" in str(code).lower() or "terminated" in message.lower():
        hint = " (the query took too long; make it more selective)"
    elif "outofmemory" in str(code).lower() or "memory" in message.lower():
        hint = " (the query needs more memory than the server allows; make it more selective)"
    else:
        hint = ""
    return cut(f"Cypher error{hint}: {code}: {message}", 1500)

"""What every search returns and how it reads the graph: :class:`SearchHit`, one projection of a
Searchable node (message or statement) for every query, rows turned into hits in one stable order,
and the read path every search takes (the agent's limits, READ mode)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..services.access import AGENT_READS, CypherParams, ReadLimits, run_read

Kind = Literal["message", "statement"]


class Embedder(Protocol):
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass
class SearchHit:
    kind: Kind
    id: Any  # int for a message, str for a statement
    text: str
    session: int | None
    date: str | None  # ISO date of the session, or None
    message_ids: list[int]  # the message itself, or the messages a statement came from
    role: str | None = None  # messages
    order: int | None = None  # messages
    statement_type: str | None = None  # statements: Fact, Instruction, Preference, Measure
    superseded: bool | None = None  # statements
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)  # method -> rank (1-based)

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, str(self.id))


def iso(value: Any) -> str | None:
    if value is None:
        return None
    if hasattr(value, "iso_format"):  # neo4j.time.Date
        return value.iso_format()
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value)


KIND_FILTER = {
    "any": "(node:Message OR node:Statement)",
    "messages": "node:Message",
    "statements": "node:Statement",
}

# One projection for both procedures: the node's kind, its session and date, and the ids of
# the messages behind it. Pattern comprehensions keep one row per node (and run on any Neo4j 5);
# their lists are ordered in Python.
PROJECTION = """
RETURN CASE WHEN node:Message THEN 'message' ELSE 'statement' END AS kind,
       node.id AS id, node.text AS text, node.role AS role, node.order AS ord,
       node.session AS node_session,
       [(node)-[:IN_SESSION|STATED_IN]->(s:Session) | [s.number, s.date]] AS sessions,
       [l IN labels(node) WHERE l IN ['Fact', 'Instruction', 'Preference', 'Measure']][0] AS stype,
       node.superseded AS superseded,
       [(node)-[:FROM_MESSAGE]->(m:Message) | [coalesce(m.order, m.id), m.id]] AS sources, score
"""


def rows_to_hits(rows: Iterable[Any]) -> list[SearchHit]:
    hits = []
    for r in rows:
        kind = r["kind"]
        if kind == "message":
            mids = [int(r["id"])]
        else:
            mids = [int(i) for _, i in sorted((o, i) for o, i in r["sources"] if i is not None)]
        sessions = sorted(((n, d) for n, d in r["sessions"] if n is not None), key=lambda x: x[0])
        session, date = sessions[0] if sessions else (r["node_session"], None)
        hits.append(SearchHit(
            kind=kind, id=r["id"], text=r["text"] or "", session=session, date=iso(date),
            message_ids=mids, role=r["role"], order=r["ord"], statement_type=r["stype"],
            superseded=(bool(r["superseded"]) if kind == "statement" else None),
            score=float(r["score"]),
        ))
    # Stable order: score (rounded so float noise cannot reorder), then kind, then id.
    hits.sort(key=lambda h: (-round(h.score, 6), h.kind, id_key(h.id)))
    for rank, hit in enumerate(hits, 1):
        hit.ranks = {"self": rank}
    return hits


def id_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int) else (1, str(value))


def read_graph(driver: Any, database: str, cypher: str, params: CypherParams,
          limits: ReadLimits = AGENT_READS) -> list[Any]:
    """Every search read goes the agent's way to the graph: READ mode, timeout, row cap, and a
    dead server raised as ``Neo4jServiceDown`` naming the conversation."""
    return run_read(driver, database, cypher, params, timeout_s=limits.timeout_s, max_rows=limits.max_rows)

"""Every Cypher statement of ingest: batched `UNWIND` writes, idempotent by deterministic ids.

Reads whose rows feed a prompt are ordered (`ORDER BY`), so prompts are deterministic. Entity
merges rewire relationships with plain Cypher (no APOC): each relationship type found on the
duplicate is copied to the kept node explicitly, then the duplicate is `DETACH DELETE`d.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

from ..services.access import UNBOUNDED, CypherParams, CypherRow, run_autocommit, run_read, run_write
from .graph_schema import ENTITY_TYPES, STATEMENT_TYPES

WRITE_BATCH = 500
OWN_LABELS = ("Session", "Message", "Chunk", "Entity", "Statement")


def _batches(rows: Sequence[Any], size: int = WRITE_BATCH) -> Iterable[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def _run(driver: Any, database: str, query: str, params: CypherParams, write: bool) -> list[CypherRow]:
    """Ingest's way to the graph is the product's one way (services/access.py); its reads are
    its own graph, read whole (no row cap, no timeout)."""
    if write:
        return list(run_write(driver, database, query, params))
    return list(run_read(driver, database, query, params, timeout_s=UNBOUNDED.timeout_s,
                         max_rows=UNBOUNDED.max_rows))


def _write(driver: Any, database: str, query: str, rows: Sequence[Any], **params: Any) -> None:
    for batch in _batches(rows):
        _run(driver, database, query, {"rows": list(batch), **params}, write=True)


def _read(driver: Any, database: str, query: str, **params: Any) -> list[CypherRow]:
    return _run(driver, database, query, params, write=False)


# -- reset -------------------------------------------------------------------------------------------

def reset_graph(driver: Any, database: str) -> None:
    """Remove what an earlier (other or unfinished) ingest left; other nodes are not touched."""
    where = " OR ".join(f"n:{label}" for label in OWN_LABELS)
    run_autocommit(driver, database,
                   f"MATCH (n) WHERE {where} CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 5000 ROWS")


# -- structure: sessions, messages, chunks ---------------------------------------------------------

def write_sessions(driver: Any, database: str, rows: list[CypherRow]) -> None:
    _write(driver, database, """
        UNWIND $rows AS row
        MERGE (s:Session {number: row.number})
        SET s.date = CASE WHEN row.date IS NULL THEN null ELSE date(row.date) END
    """, rows)


def write_messages(driver: Any, database: str, rows: list[CypherRow]) -> None:
    _write(driver, database, """
        UNWIND $rows AS row
        MERGE (m:Message {id: row.id})
        SET m:Searchable, m.role = row.role, m.text = row.text, m.order = row.order,
            m.session = row.session, m.cue = row.cue
        WITH m, row
        MATCH (s:Session {number: row.session})
        MERGE (m)-[:IN_SESSION]->(s)
    """, rows)


def write_chunks(driver: Any, database: str, rows: list[CypherRow]) -> None:
    _write(driver, database, """
        UNWIND $rows AS row
        MERGE (c:Chunk {id: row.id})
        SET c.index = row.index, c.session = row.session, c.message_ids = row.message_ids,
            c.tokens = row.tokens, c.document = row.document
        WITH c, row
        UNWIND row.message_ids AS mid
        MATCH (m:Message {id: mid})
        MERGE (c)-[:CONTAINS]->(m)
    """, rows)


# -- extraction results ----------------------------------------------------------------------------

def _check_types(types: Iterable[Any], allowed: tuple[str, ...], what: str) -> None:
    unknown = sorted({str(t) for t in types} - set(allowed))
    if unknown:
        raise ValueError(f"{what} with unknown type(s) {unknown}: expected one of {list(allowed)}")


# One query per write whatever the type (a dynamic label, `SET n:$(row.type)`): each distinct
# query text costs the server a plan, 100-300 ms of CPU on a fresh JVM, per conversation.

def write_entities(driver: Any, database: str, rows: list[CypherRow]) -> None:
    """Rows: id, type, name, norm_name, summary, date, chunk. Written in chunk order, so the
    first description seen is kept (deterministic whatever order extraction finished in)."""
    _check_types((r["type"] for r in rows), ENTITY_TYPES, "entity rows")
    _write(driver, database, """
        UNWIND $rows AS row
        MERGE (e:Entity {id: row.id})
        ON CREATE SET e:$(row.type), e.type = row.type, e.name = row.name,
            e.norm_name = row.norm_name, e.summary = row.summary, e.date = row.date,
            e.aliases = [row.name]
        ON MATCH SET e.summary = CASE WHEN coalesce(e.summary, '') = '' THEN row.summary ELSE e.summary END,
            e.date = coalesce(e.date, row.date)
        WITH e, row
        MATCH (c:Chunk {id: row.chunk})
        MERGE (e)-[:MENTIONED_IN]->(c)
    """, rows)


def write_statements(driver: Any, database: str, rows: list[CypherRow]) -> None:
    """Rows: id, type, text, subject, value, unit, session, chunk, order, message_ids, about
    (entity ids), topic (entity id or null), embedding."""
    _check_types((r["type"] for r in rows), STATEMENT_TYPES, "statement rows")
    _write(driver, database, """
        UNWIND $rows AS row
        MERGE (s:Statement {id: row.id})
        SET s:Searchable, s:$(row.type), s.type = row.type, s.text = row.text,
            s.subject = row.subject, s.value = row.value, s.unit = row.unit,
            s.session = row.session, s.chunk = row.chunk, s.order = row.order,
            s.message_ids = row.message_ids, s.embedding = row.embedding,
            s.superseded = coalesce(s.superseded, false)
        WITH s, row
        CALL (s, row) {
            MATCH (session:Session {number: row.session})
            MERGE (s)-[:STATED_IN]->(session)
        }
        CALL (s, row) {
            UNWIND row.message_ids AS mid
            MATCH (m:Message {id: mid})
            MERGE (s)-[:FROM_MESSAGE]->(m)
        }
        CALL (s, row) {
            UNWIND row.about AS eid
            MATCH (e:Entity {id: eid})
            MERGE (s)-[:ABOUT]->(e)
        }
        CALL (s, row) {
            WITH s, row WHERE row.topic IS NOT NULL
            MATCH (t:Topic {id: row.topic})
            MERGE (s)-[:TRIGGERED_BY]->(t)
        }
    """, rows)


# -- entity resolution -----------------------------------------------------------------------------

def load_entities(driver: Any, database: str, entity_types: Sequence[str]) -> dict[str, list[CypherRow]]:
    """Each type's entities, ordered by id: one query for all types (each query is a round trip)."""
    _check_types(entity_types, ENTITY_TYPES, "entities requested")
    found = _read(driver, database, """
        MATCH (e:Entity) WHERE e.type IN $entity_types
        OPTIONAL MATCH (e)-[:MENTIONED_IN]->(c:Chunk)
        WITH e, collect(DISTINCT c.session) AS sessions, count(DISTINCT c) AS mentions, min(c.index) AS first
        RETURN e.type AS type, e.id AS id, e.name AS name, e.norm_name AS norm_name,
               coalesce(e.summary, '') AS summary, e.embedding AS embedding, sessions, mentions, first
        ORDER BY e.id
    """, entity_types=list(entity_types))
    by_type: dict[str, list[CypherRow]] = {t: [] for t in entity_types}
    for row in found:
        by_type[row.pop("type")].append(row)
    return by_type


def set_message_embeddings(driver: Any, database: str, rows: list[CypherRow]) -> None:
    """rows: id, embedding — computed while extraction runs, written last."""
    _write(driver, database, """
        UNWIND $rows AS row
        MATCH (m:Message {id: row.id})
        SET m.embedding = row.embedding
    """, rows)


def set_entity_embeddings(driver: Any, database: str, rows: list[CypherRow]) -> None:
    _write(driver, database, """
        UNWIND $rows AS row
        MATCH (e:Entity {id: row.id})
        SET e.embedding = row.embedding
    """, rows)


def merge_entities(driver: Any, database: str, pairs: list[dict[str, str]]) -> None:
    """Merge each `drop` entity into its `keep` entity: copy every relationship, then delete.

    `pairs` must not chain (no id is both a keep and a drop): merge groups into one root.
    """
    if not pairs:
        return
    keeps = {p["keep"] for p in pairs}
    if keeps & {p["drop"] for p in pairs}:
        raise ValueError("merge pairs chain; merge each group into one root")
    # One query whatever the relationship types (dynamic types, Neo4j 5.26): each distinct query
    # text costs a plan on a fresh server, and one per type and direction cost 1.2 s per ingest.
    _write(driver, database, """
        UNWIND $rows AS row
        MATCH (k:Entity {id: row.keep}), (d:Entity {id: row.drop})
        CALL (k, d) {
            MATCH (d)-[r]->(other) WHERE other <> k
            MERGE (k)-[n:$(type(r))]->(other)
            SET n += properties(r)
        }
        CALL (k, d) {
            MATCH (other)-[r]->(d) WHERE other <> k AND other <> d
            MERGE (other)-[n:$(type(r))]->(k)
            SET n += properties(r)
        }
        SET k.aliases = reduce(acc = [], a IN coalesce(k.aliases, []) + coalesce(d.aliases, [d.name]) |
                               CASE WHEN a IN acc THEN acc ELSE acc + a END),
            k.summary = CASE WHEN coalesce(k.summary, '') = '' THEN d.summary ELSE k.summary END,
            k.date = coalesce(k.date, d.date)
        DETACH DELETE d
    """, pairs)


# -- updates over time -----------------------------------------------------------------------------

def load_update_candidates(driver: Any, database: str) -> list[CypherRow]:
    """Facts and Measures with the entities they are about, in conversation order."""
    return _read(driver, database, """
        MATCH (s:Statement) WHERE s:Fact OR s:Measure
        OPTIONAL MATCH (s)-[:ABOUT]->(e:Entity)
        WITH s, collect(DISTINCT e.id) AS about, collect(DISTINCT e.name) AS about_names
        RETURN s.id AS id, s.type AS type, s.text AS text, s.session AS session, s.chunk AS chunk,
               s.order AS order, s.unit AS unit, s.embedding AS embedding, about, about_names
        ORDER BY s.order, s.id
    """)


def write_supersedes(driver: Any, database: str, rows: list[CypherRow]) -> None:
    """Rows: newer, older, session (the newer's)."""
    _write(driver, database, """
        UNWIND $rows AS row
        MATCH (n:Statement {id: row.newer}), (o:Statement {id: row.older})
        MERGE (n)-[:SUPERSEDES]->(o)
        SET o.superseded = true, o.superseded_in_session = row.session
    """, rows)


def write_contradicts(driver: Any, database: str, rows: list[CypherRow]) -> None:
    _write(driver, database, """
        UNWIND $rows AS row
        MATCH (n:Statement {id: row.newer}), (o:Statement {id: row.older})
        MERGE (n)-[:CONTRADICTS]->(o)
    """, rows)


# -- stats -----------------------------------------------------------------------------------------

class GraphStats(TypedDict):
    """What a conversation's graph holds, by count."""

    entities_by_type: dict[str, int]
    relations_by_type: dict[str, int]
    chunks: int
    messages: int
    sessions: int


def graph_stats(driver: Any, database: str) -> GraphStats:
    nodes = _read(driver, database, """
        MATCH (n) WHERE n:Entity OR n:Statement
        UNWIND labels(n) AS label
        WITH label WHERE NOT label IN ['Entity', 'Statement', 'Searchable']
        RETURN label, count(*) AS n ORDER BY label
    """)
    rels = _read(driver, database, "MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS n ORDER BY type")
    chunks = _read(driver, database, "MATCH (c:Chunk) RETURN count(c) AS n")[0]["n"]
    messages = _read(driver, database, "MATCH (m:Message) RETURN count(m) AS n")[0]["n"]
    sessions = _read(driver, database, "MATCH (s:Session) RETURN count(s) AS n")[0]["n"]
    return {
        "entities_by_type": {row["label"]: row["n"] for row in nodes},
        "relations_by_type": {row["type"]: row["n"] for row in rels},
        "chunks": chunks, "messages": messages, "sessions": sessions,
    }

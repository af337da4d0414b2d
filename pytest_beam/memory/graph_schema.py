"""The knowledge graph's schema: labels, relationship types, constraints and indexes.

One graph per conversation. Statements are nodes (not relationships) because a relationship has
no time and no order; the Session node is the only clock.

Nodes
  (:Session {number, date})                         date: Neo4j DATE or null
  (:Message:Searchable {id, role, text, order, session, cue, embedding})
                                                    cue: 'instruction', 'preference' or null
                                                    (message_cues.py)
  (:Chunk {id, index, session, message_ids, tokens})
  (:Entity:<Person|Place|Organization|Tool|Topic|Event> {id, name, norm_name, summary, embedding,
      date})                                        date: an Event's stated date, as said
  (:Statement:Searchable:<Fact|Instruction|Preference|Measure> {id, text, subject, value, unit,
      session, superseded, superseded_in_session, embedding})
Relationships
  (Message)-[:IN_SESSION]->(Session)     (Chunk)-[:CONTAINS]->(Message)
  (Statement)-[:FROM_MESSAGE]->(Message) (Statement)-[:STATED_IN]->(Session)
  (Statement)-[:ABOUT]->(Entity)         (Entity)-[:MENTIONED_IN]->(Chunk)
  (newer:Statement)-[:SUPERSEDES]->(older:Statement)
  (a:Statement)-[:CONTRADICTS]->(b:Statement)
  (rule:Instruction|Preference)-[:TRIGGERED_BY]->(Topic)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import neo4j

ENTITY_TYPES: tuple[str, ...] = ("Person", "Place", "Organization", "Tool", "Topic", "Event")
STATEMENT_TYPES: tuple[str, ...] = ("Fact", "Instruction", "Preference", "Measure")
RULE_TYPES: tuple[str, ...] = ("Instruction", "Preference")

FULLTEXT_INDEX = "searchable_text"
VECTOR_INDEX = "searchable_embedding"

CONSTRAINTS: tuple[str, ...] = (
    "CREATE CONSTRAINT session_number IF NOT EXISTS FOR (s:Session) REQUIRE s.number IS UNIQUE",
    "CREATE CONSTRAINT message_id IF NOT EXISTS FOR (m:Message) REQUIRE m.id IS UNIQUE",
    "CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE",
    "CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT statement_id IF NOT EXISTS FOR (s:Statement) REQUIRE s.id IS UNIQUE",
)

INDEXES: tuple[str, ...] = (
    "CREATE INDEX entity_norm_name IF NOT EXISTS FOR (e:Entity) ON (e.norm_name)",
    f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX} IF NOT EXISTS FOR (n:Searchable) ON EACH [n.text]",
)


def vector_index_statement(dimensions: int) -> str:
    return (
        f"CREATE VECTOR INDEX {VECTOR_INDEX} IF NOT EXISTS FOR (n:Searchable) ON (n.embedding) "
        f"OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dimensions)}, "
        "`vector.similarity_function`: 'cosine'}}"
    )


def install_schema(driver: neo4j.Driver, database: str, embedding_dimensions: int,
                   timeout_s: float = 60.0) -> None:
    """Create constraints and indexes, then wait until every index is online."""
    from ..services.access import run_write

    for statement in (*CONSTRAINTS, *INDEXES, vector_index_statement(embedding_dimensions)):
        run_write(driver, database, statement)
    run_write(driver, database, f"CALL db.awaitIndexes({int(timeout_s)})")

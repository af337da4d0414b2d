"""The vector half of the search: ``db.index.vector.queryNodes`` on the ``searchable_embedding``
index with the query's embedding, and the standing instructions closest to it (exact cosine over
the messages ingest cued as one, ``message_cues``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..services.access import AGENT_READS, ReadLimits
from .graph_schema import VECTOR_INDEX
from .search_hits import KIND_FILTER, PROJECTION, SearchHit, read_graph, rows_to_hits

RULE_CUE = "instruction"

VECTOR_CYPHER = (
    "CALL db.index.vector.queryNodes($index, $depth, $embedding) YIELD node, score\n"
    "WHERE {filter}\n" + PROJECTION
)

# The standing instructions closest to the query vector (exact cosine: a conversation has a few).
RULE_CYPHER = (
    "MATCH (node:Message) WHERE node.cue = $cue AND node.embedding IS NOT NULL\n"
    "WITH node, vector.similarity.cosine(node.embedding, $embedding) AS score\n"
    "ORDER BY score DESC, node.id LIMIT $limit\n" + PROJECTION
)


def vector_search_by_embedding(driver: Any, database: str, embedding: Sequence[float], depth: int,
                               kind: str = "any", limits: ReadLimits = AGENT_READS) -> list[SearchHit]:
    cypher = VECTOR_CYPHER.replace("{filter}", KIND_FILTER[kind])
    rows = read_graph(driver, database, cypher,
                 {"index": VECTOR_INDEX, "embedding": [float(x) for x in embedding], "depth": int(depth)}, limits)
    return rows_to_hits(rows)


def rule_search(driver: Any, database: str, embedding: Sequence[float], limit: int = 1,
                limits: ReadLimits = AGENT_READS) -> list[SearchHit]:
    """The standing instructions (messages ingest cued ``instruction``) closest to ``embedding``."""
    rows = read_graph(driver, database, RULE_CYPHER,
                      {"cue": RULE_CUE, "embedding": [float(x) for x in embedding], "limit": int(limit)}, limits)
    return rows_to_hits(rows)

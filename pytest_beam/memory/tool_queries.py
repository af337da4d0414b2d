"""The Cypher the agent's tools share: how a statement is projected with its sessions, sources and
links, and how an entity is found by the name the model gives (exact forms first)."""

STATEMENT_PROJECTION = """
RETURN s.id AS id, s.text AS text, s.superseded AS superseded,
       s.superseded_in_session AS superseded_in_session, s.session AS node_session,
       [l IN labels(s) WHERE l IN $stypes][0] AS type,
       [(s)-[:STATED_IN]->(ss:Session) | [ss.number, ss.date]] AS sessions,
       [(s)-[:FROM_MESSAGE]->(m:Message) | [m.order, m.id]] AS sources,
       [(s)-[:SUPERSEDES]->(o:Statement) | o.id] AS supersedes,
       [(n:Statement)-[:SUPERSEDES]->(s) | n.id] AS superseded_by,
       [(s)-[:CONTRADICTS]-(c:Statement) | c.id] AS contradicts,
       [(s)-[:ABOUT]->(x:Entity) | x.name] AS about,
       [(s)-[:TRIGGERED_BY]->(t:Topic) | t.name] AS triggers
"""

ENTITY_MATCH = """
MATCH (e:Entity)
WHERE e.norm_name IN $norms OR toLower(e.name) = $lower OR toLower(e.name) CONTAINS $lower
   OR (e.norm_name IS NOT NULL AND e.norm_name CONTAINS $norm AND size($norm) >= 3)
WITH e, CASE WHEN e.norm_name IN $norms OR toLower(e.name) = $lower THEN 0 ELSE 1 END AS exact
RETURN e.id AS id, e.name AS name, e.summary AS summary, e.date AS date,
       [l IN labels(e) WHERE l <> 'Entity'][0] AS type, exact
ORDER BY exact, size(e.name), e.name, e.id
LIMIT $limit
"""

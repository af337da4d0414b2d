"""Hybrid search over the graph's Searchable nodes (messages and statements).

Two rankings of the same nodes, fused with reciprocal rank fusion (RRF):

* full-text: ``db.index.fulltext.queryNodes`` on the ``searchable_text`` index. The query is
  built from the user's words only, each escaped for Lucene, so no text (a question, a word of
  the chat) can inject Lucene syntax;
* vector: ``db.index.vector.queryNodes`` on the ``searchable_embedding`` index with the query's
  embedding.

(Each half is its own module, ``search_fulltext`` and ``search_vector``; the hit they return and
the one projection they read are ``search_hits``. This module fuses them.)

Each method returns up to ``depth`` candidates; a node's fused score is
``sum(1 / (rrf_k + rank))`` over the methods that found it (rank counted from 1). Every ordering
has a tie-breaker (score, then kind, then id), so the same graph always gives the same list: the
recorded model replies are replayed keyed by the exact request, and tool results feed requests.

Some questions need more than one ranking (``query_intent.py``; each step measured alone in
bench/retrieval.py against the search before it, README "Retrieval"), under a
:class:`SearchPolicy`:

* ordering ("the order in which I brought up ..."): the topic words only, a deeper pool, user turns
  only (the evidence is the user's own turns, one per topic, spread over the sessions);
* summary ("a summary of how my ... progressed"): the topic words only, no user-turn prior, and
  each user turn followed by the assistant reply that answered it;
* any other question: the standing instruction (a user turn ingest cued as one, ``message_cues``)
  closest to the question joins the fusion as a third, one-item ranking, since a question that
  falls under a rule rarely shares its words.

Everything here is parametrised Cypher; nothing a user or the chat wrote is spliced into a query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..services.access import AGENT_READS, ReadLimits
from .query_intent import question_intent, topic_words
from .search_fulltext import fulltext_search
from .search_hits import KIND_FILTER, PROJECTION, Embedder, SearchHit, id_key, read_graph, rows_to_hits
from .search_vector import rule_search, vector_search_by_embedding

Method = Literal["hybrid", "fulltext", "vector"]

#: Reciprocal-rank-fusion constant and per-method weights, tuned on bench/retrieval.py (its
#: ``--grid``): on BEAM's questions the vector ranking is the better one, so it counts double,
#: and a small constant lets the top ranks of each list dominate. The textbook k=60 with equal
#: weights lost to vector search alone there (recall@10 0.479 vs 0.505); the whole region
#: k in 1..10 with weight 1.5..3 does better, by a margin of about one question in ninety.
DEFAULT_RRF_K = 5
DEFAULT_WEIGHTS: dict[str, float] = {"fulltext": 1.0, "vector": 2.0}
#: Candidates each method contributes before fusion, as a multiple of the hits asked for.
DEFAULT_DEPTH_FACTOR = 4
MIN_DEPTH = 40
# A user turn's fused score is multiplied by this: 77% of BEAM's source messages are user turns,
# while long assistant replies crowd the top of both rankings. Chosen on the full set's five
# conversations only; held-out recall@10 0.547 -> 0.614 (bench/retrieval.py, README "Retrieval").
USER_TURN_WEIGHT = 2.5
#: Candidates per ranking for an ordering question: its evidence ranks deep (one turn per topic).
ORDERING_DEPTH = 150
#: Weight of the closest standing instruction in the fusion (a one-item ranking); 0 turns it off.
RULE_WEIGHT = 0.5


@dataclass(frozen=True)
class SearchPolicy:
    """Which question-aware steps ``hybrid_search`` takes (module docstring); each can be turned
    off alone, as bench/retrieval.py measures them."""

    ordering: bool = True
    summary: bool = True
    rule_weight: float = RULE_WEIGHT


#: The search as it was before the question-aware steps (the baseline bench/retrieval.py reports).
PLAIN_POLICY = SearchPolicy(ordering=False, summary=False, rule_weight=0.0)

# The assistant reply right after each of the given user turns, in the same session.
REPLY_CYPHER = (
    "MATCH (hit:Message) WHERE hit.id IN $ids AND hit.role = 'user'\n"
    "MATCH (node:Message) WHERE node.order = hit.order + 1 AND node.session = hit.session\n"
    "  AND node.role = 'assistant'\n"
    "WITH node, 0.0 AS score\n" + PROJECTION
)


def rrf_fuse(rankings: dict[str, list[SearchHit]], rrf_k: float = DEFAULT_RRF_K,
             weights: dict[str, float] | None = None, user_weight: float = USER_TURN_WEIGHT) -> list[SearchHit]:
    """Reciprocal rank fusion of several rankings of the same kind of hit.

    A user turn's fused score is multiplied by ``user_weight`` (statements are left alone). The
    fused list is ordered by fused score, then by best single rank, then by kind and id.
    """
    fused: dict[tuple[str, str], SearchHit] = {}
    scores: dict[tuple[str, str], float] = {}
    for method in sorted(rankings):
        weight = (weights or {}).get(method, 1.0)
        for rank, hit in enumerate(rankings[method], 1):
            key = hit.key
            if key not in fused:
                fused[key] = SearchHit(**{**hit.__dict__, "ranks": {}})
                scores[key] = 0.0
            fused[key].ranks[method] = rank
            scores[key] += weight / (rrf_k + rank)
    out = list(fused.values())
    for hit in out:
        prior = user_weight if hit.kind == "message" and hit.role == "user" else 1.0
        hit.score = scores[hit.key] * prior
    out.sort(key=lambda h: (-round(h.score, 12), min(h.ranks.values()), h.kind, id_key(h.id)))
    return out


def with_replies(driver: Any, database: str, hits: list[SearchHit],
                 limits: ReadLimits = AGENT_READS) -> list[SearchHit]:
    """``hits`` with the assistant reply to each user-turn hit placed right after it (once)."""
    users = [h.id for h in hits if h.kind == "message" and h.role == "user"]
    replies: dict[int, SearchHit] = {}
    if users:
        for reply in rows_to_hits(read_graph(driver, database, REPLY_CYPHER, {"ids": users}, limits)):
            if reply.order is not None:  # REPLY_CYPHER returns each reply's order
                replies[int(reply.order) - 1] = reply
    out: list[SearchHit] = []
    seen: set[tuple[str, str]] = set()
    for hit in hits:
        group = [hit]
        if hit.kind == "message" and hit.role == "user" and hit.order is not None and hit.order in replies:
            reply = replies[hit.order]
            group.append(SearchHit(**{**reply.__dict__, "score": hit.score, "ranks": {"reply_to": int(hit.id)}}))
        for h in group:
            if h.key not in seen:
                seen.add(h.key)
                out.append(h)
    return out


def hybrid_search(driver: Any, database: str, text: str, embedder: Embedder | None, limit: int = 10,
                  kind: str = "any", method: Method = "hybrid", rrf_k: float = DEFAULT_RRF_K,
                  depth: int | None = None, embedding: Sequence[float] | None = None,
                  weights: dict[str, float] | None = None, limits: ReadLimits = AGENT_READS,
                  user_weight: float = USER_TURN_WEIGHT, policy: SearchPolicy | None = None) -> list[SearchHit]:
    """The top ``limit`` hits for ``text``.

    ``method`` picks hybrid (RRF of both), or one method alone (for the benchmark). Without an
    embedder (or embedding), hybrid falls back to full-text alone. ``policy`` (default: every
    question-aware step) applies to hybrid only. An ``embedding`` given is the vector of ``text``
    itself: a routed question whose query becomes its topic words needs the ``embedder``.
    """
    if kind not in KIND_FILTER:
        raise ValueError(f"kind must be one of {sorted(KIND_FILTER)}, not {kind!r}")
    policy = policy if policy is not None else SearchPolicy()
    intent = question_intent(text) if method == "hybrid" else "plain"
    ordering = intent == "ordering" and policy.ordering
    summary = intent == "summary" and policy.summary
    query = text
    if ordering or summary:
        topic = topic_words(text)
        if topic != text and (embedder is not None or embedding is None):
            query, embedding = topic, None  # a given embedding is the full question's
    if ordering:
        depth = max(depth or 0, ORDERING_DEPTH)
    if summary:
        user_weight = 1.0
    depth = int(depth if depth is not None else max(MIN_DEPTH, DEFAULT_DEPTH_FACTOR * limit))
    depth = max(depth, limit)
    rankings: dict[str, list[SearchHit]] = {}
    if method in ("hybrid", "fulltext"):
        rankings["fulltext"] = fulltext_search(driver, database, query, depth if method == "hybrid" else limit,
                                               kind, limits)
    vec: Sequence[float] | None = None
    if method in ("hybrid", "vector") and (embedder is not None or embedding is not None):
        vec = embedding if embedding is not None else embedder.embed([query])[0]  # type: ignore[union-attr]
        rankings["vector"] = vector_search_by_embedding(
            driver, database, vec, depth if method == "hybrid" else limit, kind, limits)
    if method != "hybrid":
        return [SearchHit(**{**h.__dict__, "ranks": {method: i}}) for i, h in
                enumerate(rankings.get(method, []), 1)][:limit]
    weights = dict(weights if weights is not None else DEFAULT_WEIGHTS)
    if policy.rule_weight > 0 and intent == "plain" and vec is not None and kind in ("any", "messages"):
        rankings["rules"] = rule_search(driver, database, vec, 1, limits)
        weights["rules"] = policy.rule_weight
    fused = rrf_fuse(rankings, rrf_k=rrf_k, weights=weights, user_weight=user_weight)
    if ordering:  # the user's own turns (statements stay: they stand for the turns they came from)
        fused = [h for h in fused if not (h.kind == "message" and h.role != "user")]
    if summary:
        fused = with_replies(driver, database, fused[:limit], limits)
    return fused[:limit]


#: How many user turns per session ``topic_by_session`` shows by default (chosen on the dev
#: conversations: 3 per session found 0.38 of event ordering's and, with replies, 0.33 of
#: summarization's evidence, against 0.27 / 0.26 for 2; bench/retrieval_graph.py).
PER_SESSION = 3


def topic_by_session(driver: Any, database: str, text: str, embedder: Embedder | None,
                     per_session: int = PER_SESSION, replies: bool = True,
                     limits: ReadLimits = AGENT_READS) -> list[SearchHit]:
    """A topic across the whole chat: in every session, the ``per_session`` user turns that match
    its topic words best (the ordering route's ranking), in chat order, each followed by the
    assistant reply to it when ``replies``. For questions about order, change and summaries, whose
    evidence is one or two turns in each of many sessions, which a top-k list cannot hold."""
    topic = topic_words(text)
    fused = hybrid_search(driver, database, topic, embedder, limit=ORDERING_DEPTH, kind="messages",
                          depth=ORDERING_DEPTH, limits=limits, policy=PLAIN_POLICY)
    kept: dict[Any, list[SearchHit]] = {}
    for hit in fused:
        if hit.role != "user":
            continue
        group = kept.setdefault(hit.session, [])
        if len(group) < per_session:
            group.append(hit)
    chosen = sorted((h for group in kept.values() for h in group),
                    key=lambda h: (h.order if h.order is not None else 0, h.id))
    return with_replies(driver, database, chosen, limits) if replies else chosen


SESSION_OUTLINE_CYPHER = """
MATCH (node:Message) WHERE node.session = $session AND node.role = 'user'
WITH node, 0.0 AS score ORDER BY node.order
""" + PROJECTION


def session_user_turns(driver: Any, database: str, session: int,
                       limits: ReadLimits = AGENT_READS) -> list[SearchHit]:
    """Every user turn of one session, in chat order (a session's outline)."""
    rows = read_graph(driver, database, SESSION_OUTLINE_CYPHER, {"session": int(session)}, limits)
    hits = rows_to_hits(rows)
    hits.sort(key=lambda h: (h.order if h.order is not None else 0, h.id))
    return hits

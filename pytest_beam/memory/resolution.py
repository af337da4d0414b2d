"""Entity resolution: cheap signals decide the clear cases, the model only the ambiguous ones.

Per entity type:
1. same normalised name (accents, case, punctuation, titles such as "Dr." removed): merge;
2. blocking: each remaining name is compared only with names that share a word with it and with
   its few nearest neighbours by embedding (name + description), at most `per_entity` candidates
   each, so the number of pairs grows linearly with the number of entities;
3. string similarity (rapidfuzz) and embedding cosine sort each pair into clear merge, clear
   non-merge, or ambiguous;
4. ambiguous pairs go to the model (role "resolution") in batches, most similar first, at most
   `max_llm_pairs` per type; pairs beyond the cap stay apart.
Merges are transitive (union-find) and each group is merged into one kept node in Neo4j.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..services.access import CypherRow
from .decisions import DecisionStats, GraphDecider, Replies, ask_in_batches, cap_per_label
from .graph_schema import ENTITY_TYPES

CLEAR_MERGE_RATIO = 0.92
AMBIGUOUS_TOKEN_SET = 0.85
AMBIGUOUS_RATIO = 0.75
AMBIGUOUS_COSINE = 0.85
MAX_POSTING = 50  # a word shared by more names than this is too common to block on


def _digits(text: str) -> str:
    return "".join(sorted(re.findall(r"\d+", text)))


@dataclass
class Candidate:
    left: CypherRow
    right: CypherRow
    ratio: float
    token_set: float
    cosine: float

    @property
    def score(self) -> float:
        return max(self.token_set, self.cosine, self.ratio)


@dataclass
class ResolutionStats(DecisionStats):
    entities: int = 0
    merged_by_name: int = 0
    merged_by_similarity: int = 0
    merged_by_model: int = 0


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if rb < ra:
            ra, rb = rb, ra
        self.parent[rb] = ra
        return True


def _keep_key(entity: CypherRow) -> tuple[int, int, int, str]:
    """The node a group is merged into: most mentioned, then first mentioned, then longest name."""
    first = entity.get("first")
    return (-int(entity.get("mentions") or 0), first if first is not None else 1 << 30,
            -len(entity["name"]), entity["id"])


def candidate_pairs(entities: list[CypherRow], per_entity: int = 3, neighbours: int = 3) -> list[Candidate]:
    """Blocked candidate pairs among `entities` (one per normalised name), each pair once."""
    from rapidfuzz import fuzz

    by_id = {e["id"]: e for e in entities}
    ids = [e["id"] for e in entities]
    postings: dict[str, list[str]] = {}
    for e in entities:
        for word in set(e["norm_name"].split()):
            if len(word) >= 2:
                postings.setdefault(word, []).append(e["id"])
    near: dict[str, set[str]] = {i: set() for i in ids}
    for members in postings.values():
        if len(members) > MAX_POSTING:
            continue
        for member in members:
            near[member].update(m for m in members if m != member)
    vectors = [e.get("embedding") for e in entities]
    if len(entities) > 1 and all(vectors):
        import numpy as np

        matrix = np.asarray(vectors, dtype=np.float32)
        for start in range(0, len(ids), 512):
            sims = matrix[start:start + 512] @ matrix.T
            for row in range(sims.shape[0]):
                sims[row, start + row] = -2.0
            k = min(neighbours, len(ids) - 1)
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k > 0 else np.empty((sims.shape[0], 0), int)
            for row in range(sims.shape[0]):
                near[ids[start + row]].update(ids[j] for j in top[row])

    def cosine(a: CypherRow, b: CypherRow) -> float:
        # rounded: float noise between machines must not reorder pairs (prompts are replayed by content)
        if a.get("embedding") and b.get("embedding"):
            return round(float(sum(x * y for x, y in zip(a["embedding"], b["embedding"]))), 3)
        return 0.0

    scored: dict[tuple[str, str], Candidate] = {}
    for a_id in ids:
        a = by_id[a_id]
        mine = []
        for b_id in near[a_id]:
            b = by_id[b_id]
            pair = (a_id, b_id) if a_id < b_id else (b_id, a_id)
            if pair in scored:
                mine.append(scored[pair])
                continue
            mine.append(Candidate(
                by_id[pair[0]], by_id[pair[1]],
                ratio=fuzz.ratio(a["norm_name"], b["norm_name"]) / 100.0,
                token_set=fuzz.token_set_ratio(a["norm_name"], b["norm_name"]) / 100.0,
                cosine=cosine(a, b),
            ))
        mine.sort(key=lambda c: (-c.score, c.left["id"], c.right["id"]))
        for c in mine[:per_entity]:
            scored[(c.left["id"], c.right["id"])] = c
    return sorted(scored.values(), key=lambda c: (-c.score, c.left["id"], c.right["id"]))


def classify(c: Candidate) -> str:
    """"merge", "apart" or "ask"."""
    same_numbers = _digits(c.left["norm_name"]) == _digits(c.right["norm_name"])
    if c.ratio >= CLEAR_MERGE_RATIO and same_numbers and min(len(c.left["norm_name"]), len(c.right["norm_name"])) >= 5:
        return "merge"
    if c.token_set >= AMBIGUOUS_TOKEN_SET or c.ratio >= AMBIGUOUS_RATIO or c.cosine >= AMBIGUOUS_COSINE:
        return "ask"
    return "apart"


@dataclass
class EntityResolver(GraphDecider):
    embedder: Any = None  # gives entities without a vector one (name + description)
    stats: ResolutionStats = field(default_factory=ResolutionStats)

    def run(self, entity_types: tuple[str, ...] = ENTITY_TYPES, on_call: Callable[[], None] | None = None,
            on_submitted: Callable[[], None] | None = None) -> ResolutionStats:
        """``on_submitted`` is called once every question is in flight (the CPU is idle then)."""
        from . import store

        # Every type's questions go to the model before any type's replies are read: the types
        # are independent, so their calls overlap instead of costing one model round trip each.
        # For the same reason the graph is read, given vectors and merged once for all types.
        entities = store.load_entities(self.driver, self.database, entity_types)
        embedded = self._embed_missing([e for group in entities.values() if len(group) >= 2 for e in group])
        plans = [self._plan(entity_type, entities[entity_type]) for entity_type in entity_types]
        # the vectors are stored while the questions are out: nothing before needs them in the graph
        store.set_entity_embeddings(self.driver, self.database,
                                    [{"id": e["id"], "embedding": e["embedding"]} for e in embedded])
        if on_submitted:
            on_submitted()
        pairs: list[dict[str, str]] = []
        for plan in plans:
            pairs.extend(self._finish(plan, on_call))
            self.stats.add(plan.stats)
        store.merge_entities(self.driver, self.database, pairs)  # types never merge across each other
        return self.stats

    def _embed_missing(self, entities: list[CypherRow]) -> list[CypherRow]:
        """Give entities without a vector one; those are returned, to be stored."""
        missing = [e for e in entities if not e.get("embedding")]
        if missing:
            vectors = self.embedder.embed([entity_embedding_text(e) for e in missing])
            for e, v in zip(missing, vectors):
                e["embedding"] = v
        return missing

    def _plan(self, entity_type: str, entities: list[CypherRow]) -> _TypePlan:
        """Block and classify one type's entities (embedded already); submit its questions."""
        stats = ResolutionStats()
        stats.entities = len(entities)
        plan = _TypePlan(entity_type, entities, stats, _UnionFind())
        if len(entities) < 2:
            return plan
        groups = plan.groups
        by_norm: dict[str, str] = {}
        for e in entities:  # ordered by id
            first = by_norm.setdefault(e["norm_name"], e["id"])
            if first != e["id"] and groups.union(first, e["id"]):
                stats.merged_by_name += 1
        representatives = [e for e in entities if by_norm[e["norm_name"]] == e["id"]]
        candidates = candidate_pairs(representatives)
        stats.candidate_pairs = len(candidates)
        ask: list[Candidate] = []
        for c in candidates:
            verdict = classify(c)
            if verdict == "merge":
                if groups.union(c.left["id"], c.right["id"]):
                    stats.merged_by_similarity += 1
            elif verdict == "ask":
                ask.append(c)
        # pairs already joined through clear merges need no question
        ask = [c for c in ask if groups.find(c.left["id"]) != groups.find(c.right["id"])]
        ask = cap_per_label(ask, lambda c: entity_type, self.budget, stats)
        if stats.pairs_over_cap:
            self.notes.append(f"resolution {entity_type}: {stats.pairs_over_cap} ambiguous pairs over "
                              f"max_llm_pairs={self.budget.max_llm_pairs} were left apart")
        stats.model_pairs = len(ask)
        plan.replies = self._submit(entity_type, ask)
        return plan

    def _finish(self, plan: _TypePlan, on_call: Callable[[], None] | None) -> list[dict[str, str]]:
        """Read the type's replies; the (keep, drop) pairs that merge its groups."""
        stats, groups = plan.stats, plan.groups
        if plan.replies is not None:
            verdicts = plan.replies.verdicts(stats, on_call, lambda reply: {d.pair: d.same for d in reply.decisions},
                                             False)
            for c, same in verdicts:
                if bool(same) and groups.union(c.left["id"], c.right["id"]):
                    stats.merged_by_model += 1
        members: dict[str, list[CypherRow]] = {}
        for e in plan.entities:
            members.setdefault(groups.find(e["id"]), []).append(e)
        pairs: list[dict[str, str]] = []
        for group in members.values():
            if len(group) < 2:
                continue
            keep = min(group, key=_keep_key)
            pairs.extend({"keep": keep["id"], "drop": e["id"]} for e in sorted(group, key=lambda x: x["id"])
                         if e["id"] != keep["id"])
        return pairs

    def _submit(self, entity_type: str, ask: list[Candidate]) -> Replies[Candidate]:
        from .extraction_schema import ResolutionReply
        from .prompts_ingest import resolution_messages

        return ask_in_batches(self.models, self.executor, ask, self.budget,
                              lambda batch: resolution_messages(entity_type, [(c.left, c.right) for c in batch]),
                              ResolutionReply)


@dataclass
class _TypePlan:
    entity_type: str
    entities: list[CypherRow]
    stats: ResolutionStats
    groups: _UnionFind
    replies: Replies[Candidate] | None = None  # the submitted questions


def entity_embedding_text(entity: CypherRow) -> str:
    summary = entity.get("summary") or ""
    return f"{entity['name']}: {summary}" if summary else entity["name"]

"""Updates over time: a newer Fact or Measure that replaces or contradicts an older one.

Candidates come from blocking, never from the whole graph: an older statement (earlier chunk)
about one of the same entities, ranked by embedding cosine and word overlap, at most
`per_statement` per newer statement. The model (role "resolution") decides each pair in batches:
"replaces" gives `(newer)-[:SUPERSEDES]->(older)` and marks the older one `superseded=true,
superseded_in_session=<newer's session>`; "contradicts" gives `(newer)-[:CONTRADICTS]->(older)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..services.access import CypherRow
from .decisions import DecisionStats, GraphDecider, ask_in_batches, cap_per_label

MIN_COSINE = 0.55
MIN_TOKEN_SET = 0.6
WINDOW = 200  # older statements of one entity looked at per newer statement


@dataclass
class UpdateStats(DecisionStats):
    statements: int = 0
    supersedes: int = 0
    contradicts: int = 0


@dataclass
class _Pair:
    older: CypherRow
    newer: CypherRow
    score: float


def _norm(text: str) -> str:
    return " ".join("".join(c.lower() if c.isalnum() else " " for c in text).split())


def update_candidates(statements: list[CypherRow], per_statement: int = 2) -> list[_Pair]:
    """Pairs (older, newer) sharing an ABOUT entity, from different chunks, similar enough."""
    from rapidfuzz import fuzz

    by_entity: dict[str, list[CypherRow]] = {}
    for s in statements:  # ordered by (order, id)
        for eid in s["about"]:
            by_entity.setdefault(eid, []).append(s)
    position = {s["id"]: n for n, s in enumerate(statements)}
    best: dict[str, dict[str, _Pair]] = {}
    for eid in sorted(by_entity):
        group = by_entity[eid]
        for n, newer in enumerate(group):
            for older in group[max(0, n - WINDOW):n]:
                if older["chunk"] == newer["chunk"] or position[older["id"]] >= position[newer["id"]]:
                    continue
                if older["order"] >= newer["order"]:
                    continue
                if _norm(older["text"]) == _norm(newer["text"]):
                    continue  # the same statement said again: no update
                cos = 0.0
                if older.get("embedding") and newer.get("embedding"):
                    # rounded: float noise between machines must not reorder pairs (prompts are replayed)
                    cos = round(float(sum(x * y for x, y in zip(older["embedding"], newer["embedding"]))), 3)
                words = fuzz.token_set_ratio(_norm(older["text"]), _norm(newer["text"])) / 100.0
                same_measure = (older["type"] == newer["type"] == "Measure" and older.get("unit")
                                and (older.get("unit") or "").lower() == (newer.get("unit") or "").lower())
                if cos < MIN_COSINE and words < MIN_TOKEN_SET and not same_measure:
                    continue
                score = max(cos, words) + (0.1 if same_measure else 0.0)
                mine = best.setdefault(newer["id"], {})
                if older["id"] not in mine or mine[older["id"]].score < score:
                    mine[older["id"]] = _Pair(older, newer, score)
    pairs: list[_Pair] = []
    for newer_id in sorted(best, key=lambda i: position[i]):
        ranked = sorted(best[newer_id].values(), key=lambda p: (-p.score, p.older["id"]))
        pairs.extend(ranked[:per_statement])
    return pairs


@dataclass
class UpdateLinker(GraphDecider):
    stats: UpdateStats = field(default_factory=UpdateStats)

    def run(self, on_call: Callable[[], None] | None = None) -> UpdateStats:
        from . import store

        statements = store.load_update_candidates(self.driver, self.database)
        self.stats.statements = len(statements)
        pairs = update_candidates(statements)
        self.stats.candidate_pairs = len(pairs)
        # most similar first, capped per label of the newer statement
        pairs.sort(key=lambda p: (-p.score, p.newer["order"], p.newer["id"], p.older["id"]))
        kept = cap_per_label(pairs, lambda p: p.newer["type"], self.budget, self.stats)
        if self.stats.pairs_over_cap:
            self.notes.append(f"updates: {self.stats.pairs_over_cap} candidate pairs over "
                              f"max_llm_pairs={self.budget.max_llm_pairs} were not checked")
        # prompts list pairs in conversation order
        kept.sort(key=lambda p: (p.newer["order"], p.newer["id"], p.older["order"], p.older["id"]))
        self.stats.model_pairs = len(kept)
        supersedes, contradicts = [], []
        for p, relation in self._ask_model(kept, on_call):
            row = {"newer": p.newer["id"], "older": p.older["id"], "session": p.newer["session"]}
            if relation == "replaces":
                supersedes.append(row)
            elif relation == "contradicts":
                contradicts.append(row)
        store.write_supersedes(self.driver, self.database, supersedes)
        store.write_contradicts(self.driver, self.database, contradicts)
        self.stats.supersedes = len(supersedes)
        self.stats.contradicts = len(contradicts)
        return self.stats

    def _ask_model(self, kept: list[_Pair], on_call: Callable[[], None] | None) -> Iterator[tuple[_Pair, str]]:
        from .extraction_schema import UpdateReply
        from .prompts_ingest import update_messages

        def view(s: CypherRow) -> CypherRow:
            return {"text": s["text"], "session": s["session"], "type": s["type"],
                    "about": list(s.get("about_names") or [])}

        replies = ask_in_batches(self.models, self.executor, kept, self.budget,
                                 lambda batch: update_messages([(view(p.older), view(p.newer)) for p in batch]),
                                 UpdateReply)
        return replies.verdicts(self.stats, on_call, lambda reply: {d.pair: d.relation for d in reply.decisions},
                                "unrelated")

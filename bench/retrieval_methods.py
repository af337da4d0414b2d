"""Named retrieval methods of bench/retrieval.py, each a small configuration over the same parts.

A method fuses a lexical ranking (Lucene full-text from Neo4j, or bm25s) and a dense ranking
(the messages embedded as a ``unit``: a head of N words, or windows) with weighted RRF, then
optionally shows each hit's neighbour (the user turn of an assistant reply, and so on). The
first k distinct messages of the result are its top k.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from retrieval_rank import (
    BM25Ranker,
    Corpus,
    VectorCache,
    dense_scores,
    expand,
    head,
    make_cache,
    order,
    rrf,
    scripted_statements,
    statement_ranking,
)


@dataclass(frozen=True)
class Config:
    dense: str = "head:50"  # what a message's vector is made from (retrieval_rank.dense_scores)
    lexical: str = "lucene"  # lucene (Neo4j full-text, the agent's), bm25 (bm25s) or none
    rrf_k: float = 5.0
    w_lex: float = 1.0
    w_dense: float = 2.0
    depth: int = 80  # candidates per list before fusion (search.py: max(40, 4 * limit), limit 20)
    nbr: str = "none"  # neighbour rule (retrieval_rank.neighbours)
    nbr_first: bool = False  # put the neighbour before the hit instead of after it
    embedder: str = "local"
    extra_dense: str = ""  # a second dense list (another unit), fused with weight w_extra
    w_extra: float = 1.0
    w_stmt: float = 0.0  # weight of the statements list (scripted extractions), 0: not used
    user_weight: float = 1.0  # multiplies a user turn's fused score (BEAM's evidence is mostly user turns)
    prf: float = 0.0  # pseudo-relevance feedback: query vector + prf x mean of the top prf_m hits' vectors
    prf_m: int = 3

    def describe(self) -> str:
        lex = {"lucene": "Lucene full-text", "bm25": "bm25s", "none": "no lexical list"}[self.lexical]
        extra = f" + dense {self.extra_dense} x{self.w_extra:g}" if self.extra_dense else ""
        extra += f" + statements x{self.w_stmt:g}" if self.w_stmt else ""
        user = f", user turns x{self.user_weight:g}" if self.user_weight != 1.0 else ""
        user += f", feedback x{self.prf:g} from the top {self.prf_m}" if self.prf else ""
        nbr = "" if self.nbr == "none" else f", neighbours {self.nbr}{' first' if self.nbr_first else ''}"
        return (f"{lex} x{self.w_lex:g} + dense {self.dense} ({self.embedder}) x{self.w_dense:g}{extra}, "
                f"RRF k={self.rrf_k:g}, depth {self.depth}{user}{nbr}")


BASE = Config()  # the previous default, computed offline (exact vectors instead of Neo4j's HNSW)

#: One idea at a time against BASE, then the combination that won on dev. Every constant was
#: chosen on the dev conversations only (bench/retrieval_tune.py prints the grids); ideas that lost
#: on dev and are costly to embed (whole-message windows, statements) are measured there only.
METHODS: dict[str, Config] = {
    "base-offline": BASE,
    "neighbours": replace(BASE, nbr="pair"),
    "bm25-lexical": replace(BASE, lexical="bm25"),
    "rrf-dev": replace(BASE, depth=40),
    "user-prior": replace(BASE, user_weight=2.5),
    "user-prior+e5": replace(BASE, user_weight=2.5, extra_dense="head:50@e5-small-q4", w_extra=1.0),
    "hybrid-user": replace(BASE, user_weight=2.5, depth=40),
}
DEFAULT_METHOD = "hybrid-user"


class Ranker:
    """Rankings of one conversation for any Config, with the parts cached per question."""

    def __init__(self, corpus: Corpus, caches: dict[str, VectorCache], documents: Any = None) -> None:
        self.corpus = corpus
        self.documents = documents
        self._statements: list[tuple[str, list[int]]] | None = None
        self.caches = caches
        self._bm25: BM25Ranker | None = None
        self._dense: dict[tuple[str, str, str], list[int]] = {}

    def cache(self, spec: str) -> VectorCache:
        if spec not in self.caches:
            self.caches[spec] = make_cache(spec)
        return self.caches[spec]

    def bm25(self, query: str) -> list[int]:
        if self._bm25 is None:
            self._bm25 = BM25Ranker(self.corpus)
        return self._bm25.rank(query, 200)

    def dense(self, query: str, unit: str, embedder: str) -> list[int]:
        key = (query, unit, embedder)
        if key not in self._dense:
            self._dense[key] = order(dense_scores(self.cache(embedder), self.corpus, query, unit), self.corpus, 200)
        return self._dense[key]

    def feedback_dense(self, query: str, cfg: Config, seeds: list[int]) -> list[int]:
        """Rocchio on the message vectors: no model call, only vectors ingest already has."""
        kind, _, words = cfg.dense.partition(":")
        if kind != "head":
            raise ValueError(f"feedback needs head vectors, not {cfg.dense!r}")
        cache = self.cache(cfg.embedder)
        q = cache.embed([query], "query")[0]
        vecs = cache.embed([head(t, int(words)) for t in self.corpus.texts])
        rows = [self.corpus.position[m] for m in seeds]
        moved = q + cfg.prf * vecs[rows].mean(axis=0)
        moved /= max(float(np.linalg.norm(moved)), 1e-9)
        return order(vecs @ moved, self.corpus, 200)

    def statements(self, query: str, embedder: str) -> list[int]:
        if self._statements is None:
            self._statements = scripted_statements(self.documents)
        return statement_ranking(self.cache(embedder), self._statements, query)

    def rank(self, cfg: Config, query: str, lucene: list[int]) -> list[int]:
        lists: dict[str, list[int]] = {}
        weights = {"lex": cfg.w_lex, "dense": cfg.w_dense, "extra": cfg.w_extra, "stmt": cfg.w_stmt}
        if cfg.lexical == "lucene":
            lists["lex"] = lucene[:cfg.depth]
        elif cfg.lexical == "bm25":
            lists["lex"] = self.bm25(query)[:cfg.depth]
        if cfg.dense:
            lists["dense"] = self.dense(query, cfg.dense, cfg.embedder)[:cfg.depth]
        if cfg.extra_dense:
            unit, _, spec = cfg.extra_dense.partition("@")
            lists["extra"] = self.dense(query, unit, spec or cfg.embedder)[:cfg.depth]
        if cfg.w_stmt:
            lists["stmt"] = self.statements(query, cfg.embedder)[:cfg.depth]
        boost = None
        if cfg.user_weight != 1.0:
            c = self.corpus
            boost = {mid: cfg.user_weight for mid, role in zip(c.ids, c.roles) if role == "user"}
        fused = rrf(lists, cfg.rrf_k, weights, boost)
        if cfg.prf:  # a second pass: the dense list again, its query moved towards the first pass's top hits
            lists["dense"] = self.feedback_dense(query, cfg, fused[:cfg.prf_m])[:cfg.depth]
            fused = rrf(lists, cfg.rrf_k, weights, boost)
        return expand(self.corpus, fused, cfg.nbr, cfg.nbr_first) if cfg.nbr != "none" else fused


def corpus_of(conv: Any) -> Corpus:
    return Corpus([m.id for m in conv.messages], [m.role for m in conv.messages],
                  [m.session for m in conv.messages], [m.text for m in conv.messages])

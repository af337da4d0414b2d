"""Offline rankings for bench/retrieval.py: cached embeddings, dense, BM25, fusion, neighbours.

Everything here ranks one conversation's messages for one question in plain numpy, exactly (no
approximate index), so each retrieval idea can be measured against the same baseline without
rebuilding a graph. The lexical side from Neo4j (Lucene full-text, as the agent's tool runs it)
comes in as a ranked list of message ids from the Neo4j pass of bench/retrieval.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pytest_beam.paths import cache_root


def cache_dir() -> Path:
    """The bench's vectors and Neo4j lists: ``retrieval-bench/`` under pytest-beam's cache folder,
    read when used (a bench's ``--cache`` sets that folder after these modules are imported)."""
    return cache_root() / "retrieval-bench"


def _key(kind: str, text: str) -> str:
    return hashlib.sha1(f"{kind}\0{text}".encode()).hexdigest()


class VectorCache:
    """Unit vectors of texts for one embedder, on disk between runs (keyed by sha1 of kind+text).

    ``kind`` separates query from passage vectors for models that embed them differently.
    """

    def __init__(self, name: str, passage: Callable[[list[str]], Any], query: Callable[[list[str]], Any]) -> None:
        self.name = name
        self._fns = {"passage": passage, "query": query}
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
        self.path = cache_dir() / f"{safe}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        self.dirty = False
        self.seconds = 0.0
        self.computed = 0
        if self.path.exists():
            data = np.load(self.path)
            self.vectors = dict(zip(data["keys"].tolist(), data["vecs"]))

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        keys = [_key(kind, t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in self.vectors}.items())
        if missing:
            started = time.monotonic()
            for start in range(0, len(missing), 256):
                part = missing[start:start + 256]
                got = np.asarray(self._fns[kind]([t for _, t in part]), dtype=np.float32)
                for (k, _), v in zip(part, got):
                    self.vectors[k] = v / (np.linalg.norm(v) or 1.0)
                if len(missing) > 256:
                    print(f"    {self.name}: {start + len(part)}/{len(missing)} texts", file=sys.stderr)
            self.seconds += time.monotonic() - started
            self.computed += len(missing)
            self.dirty = True
        if not keys:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self.vectors[k] for k in keys])

    def save(self) -> None:
        """Merge this process's new vectors into the file (other runs may have added theirs)."""
        if not self.dirty:
            return
        from pytest_beam.files import file_lock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.path.with_name(f".{self.path.stem}.lock")):
            if self.path.exists():
                data = np.load(self.path)
                for k, v in zip(data["keys"].tolist(), data["vecs"]):
                    self.vectors.setdefault(k, v)
            keys = list(self.vectors)
            tmp = self.path.with_name(self.path.stem + ".tmp.npz")
            np.savez(tmp, keys=np.asarray(keys), vecs=np.stack([self.vectors[k] for k in keys]))
            tmp.replace(self.path)
        self.dirty = False


def make_cache(spec: str) -> VectorCache:
    """``local`` (the product's int8 MiniLM), ``local-export``, or a loader module's name."""
    if spec in ("local", "local-export"):
        from pytest_beam.memory.embeddings import make_embedder

        emb = make_embedder(spec)
        return VectorCache(emb.name, emb.embed, emb.embed)
    if spec == "e5-small-q4":
        from retrieval_e5 import E5SmallEmbedder

        e5 = E5SmallEmbedder()
        return VectorCache(e5.name, e5.embed, e5.embed_queries)
    raise SystemExit(f"unknown embedder {spec!r}")


# --- what a message is embedded as ---------------------------------------------------------------

def head(text: str, words: int) -> str:
    """The first ``words`` words (ingest's message_embedding_text); words <= 0: first 2,000 chars."""
    if words <= 0:
        return text[:2000]
    return " ".join(text.split(maxsplit=words)[:words])


def windows(text: str, words: int, max_windows: int) -> list[str]:
    """Consecutive windows of ``words`` words, at most ``max_windows`` of them (the head first)."""
    tokens = text.split()
    if not tokens:
        return [text]
    return [" ".join(tokens[i:i + words]) for i in range(0, len(tokens), words)][:max_windows]


@dataclass
class Corpus:
    """One conversation's messages, ready to rank."""

    ids: list[int]
    roles: list[str]
    sessions: list[int]
    texts: list[str]
    position: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.position = {mid: i for i, mid in enumerate(self.ids)}


def dense_scores(cache: VectorCache, corpus: Corpus, query: str, unit: str) -> np.ndarray:
    """Cosine of the query with each message, embedded as ``unit``:

    ``head:N`` the first N words; ``win:W:M`` max over windows of W words (at most M);
    ``winmean:W:M`` the normalised mean of those windows' vectors.
    """
    q = cache.embed([query], "query")[0]
    kind, *params = unit.split(":")
    if kind == "head":
        vecs = cache.embed([head(t, int(params[0])) for t in corpus.texts])
        return vecs @ q
    words, most = int(params[0]), int(params[1])
    pieces: list[str] = []
    owner: list[int] = []
    for i, text in enumerate(corpus.texts):
        parts = windows(text, words, most)
        pieces.extend(parts)
        owner.extend([i] * len(parts))
    vecs = cache.embed(pieces)
    owner_arr = np.asarray(owner)
    if kind == "win":
        sims = vecs @ q
        out = np.full(len(corpus.texts), -1.0, dtype=np.float32)
        np.maximum.at(out, owner_arr, sims)
        return out
    if kind == "winmean":
        sums = np.zeros((len(corpus.texts), vecs.shape[1]), dtype=np.float32)
        np.add.at(sums, owner_arr, vecs)
        sums /= np.clip(np.linalg.norm(sums, axis=1, keepdims=True), 1e-9, None)
        return sums @ q
    raise ValueError(f"unknown unit {unit!r}")


def order(scores: np.ndarray, corpus: Corpus, depth: int = 100) -> list[int]:
    """Message ids by score, best first; ties to the later message (as the baselines break them)."""
    idx = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), -i))[:depth]
    return [corpus.ids[i] for i in idx]


class BM25Ranker:
    """bm25s over whole message texts (the bm25 baseline's index), optionally with stemming-free
    English stop words, as that baseline tokenises."""

    def __init__(self, corpus: Corpus) -> None:
        from pytest_beam.systems.bm25 import BM25Index

        self.index = BM25Index(corpus.texts)
        self.corpus = corpus

    def rank(self, query: str, depth: int = 100) -> list[int]:
        return [self.corpus.ids[i] for i, _ in self.index.rank(query, depth)]


def rrf(lists: dict[str, list[int]], k: float, weights: dict[str, float],
        boost: dict[int, float] | None = None) -> list[int]:
    """Weighted reciprocal-rank fusion of ranked id lists; ties by best single rank, then id.
    ``boost`` multiplies a message's fused score (a prior, e.g. on user turns)."""
    score: dict[int, float] = {}
    best: dict[int, int] = {}
    for name, ids in lists.items():
        w = weights.get(name, 1.0)
        for rank, mid in enumerate(ids, 1):
            score[mid] = score.get(mid, 0.0) + w / (k + rank)
            best[mid] = min(best.get(mid, rank), rank)
    if boost:
        score = {m: v * boost.get(m, 1.0) for m, v in score.items()}
    return sorted(score, key=lambda m: (-round(score[m], 12), best[m], m))


def neighbours(corpus: Corpus, mid: int, rule: str) -> list[int]:
    """Messages shown with a hit. ``pair``: a user turn brings the assistant reply right after it
    and an assistant reply the user turn right before it (same session); ``user``: only an
    assistant hit brings its user turn; ``none``: nothing."""
    if rule == "none":
        return []
    i = corpus.position[mid]
    role, session = corpus.roles[i], corpus.sessions[i]
    out = []
    if role == "assistant" and i > 0 and corpus.roles[i - 1] == "user" and corpus.sessions[i - 1] == session:
        out.append(corpus.ids[i - 1])
    if rule == "pair" and role == "user" and i + 1 < len(corpus.ids) and corpus.roles[i + 1] == "assistant" \
            and corpus.sessions[i + 1] == session:
        out.append(corpus.ids[i + 1])
    return out


def expand(corpus: Corpus, ranked: list[int], rule: str, first: bool = False) -> list[int]:
    """The ranking with each hit's neighbours placed right after it (``first``: right before it);
    duplicates dropped, so the first k of the result are k distinct messages."""
    out: list[int] = []
    seen: set[int] = set()
    for mid in ranked:
        group = [*neighbours(corpus, mid, rule), mid] if first else [mid, *neighbours(corpus, mid, rule)]
        for m in group:
            if m not in seen:
                seen.add(m)
                out.append(m)
    return out


def role_boost(corpus: Corpus, ranked: list[int], user_weight: float, k: float) -> list[int]:
    """Re-score a fused list by rank, multiplying user turns' 1/(k+rank) by ``user_weight``."""
    scored = []
    for rank, mid in enumerate(ranked, 1):
        w = user_weight if corpus.roles[corpus.position[mid]] == "user" else 1.0
        scored.append((-(w / (k + rank)), rank, mid))
    return [mid for _, _, mid in sorted(scored)]


def load_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


# --- statements (scripted realistic extractions) as retrieval units ------------------------------

def scripted_statements(documents: Sequence[Any]) -> list[tuple[str, list[int]]]:
    """(text, source message ids) of every statement the bench's scripted extraction model
    (bench/ingest_cost.py: sentences of user turns that name an entity, a measure, a rule or a
    preference; at most 10 per chunk) returns for the conversation's real chunk prompts. A real
    model's statements would be rewritten facts, not copied sentences; this is what the bench has."""
    from ingest_cost import scripted_extraction

    from pytest_beam.memory.chunking import chunk_documents, document_order
    from pytest_beam.memory.prompts_ingest import extraction_messages

    out = []
    for chunk in chunk_documents(document_order(documents)):
        prompt = extraction_messages(chunk)[1]["content"]
        for st in scripted_extraction(prompt)["statements"]:
            out.append((st["text"], [int(i) for i in st["message_ids"]]))
    return out


def statement_ranking(cache: VectorCache, statements: list[tuple[str, list[int]]], query: str,
                      depth: int = 200) -> list[int]:
    """Message ids in the order of their best statement's cosine with the query."""
    if not statements:
        return []
    q = cache.embed([query], "query")[0]
    sims = cache.embed([t for t, _ in statements]) @ q
    out: list[int] = []
    seen: set[int] = set()
    for i in sorted(range(len(sims)), key=lambda i: -float(sims[i])):
        for mid in statements[i][1]:
            if mid not in seen:
                seen.add(mid)
                out.append(mid)
    return out[:depth]


def session_spread(corpus: Corpus, ranked: list[int], decay: float, k: float, head_len: int = 60) -> list[int]:
    """Greedy re-ranking that discounts a hit by ``decay`` per earlier pick from its session (the
    rank-based score 1/(k+rank) stands in for the fused score); the tail keeps its order."""
    pool = list(enumerate(ranked[:head_len], 1))
    picked: list[int] = []
    count: dict[int, int] = {}
    while pool:
        best = max(pool, key=lambda rm: (decay ** count.get(corpus.sessions[corpus.position[rm[1]]], 0)) / (k + rm[0]))
        pool.remove(best)
        session = corpus.sessions[corpus.position[best[1]]]
        count[session] = count.get(session, 0) + 1
        picked.append(best[1])
    return picked + ranked[head_len:]

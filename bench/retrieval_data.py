"""Data and statistics for bench/retrieval.py: the dev / held-out groups, recall, standard errors.

Dev is the full set's conversations (1, 4, 6, 13, 17), the only ones anything is tuned on;
held-out is the other fifteen conversations of BEAM's 100K split. A question is scored when it
is not an abstention question and has source message ids (five held-out questions have none).
Messages are what a memory system ingests: without the generator's plan markers
(``strip_document``), as the harness hands them over by default.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_beam.data.local_copy import load_local
from pytest_beam.data.markers import strip_document
from pytest_beam.data.sets import FULL_CONVERSATIONS, known_bad_rubrics, session_documents

KS = (5, 10, 20)
ALL_CONVERSATIONS: tuple[str, ...] = tuple(str(i) for i in range(1, 21))
GROUPS: dict[str, tuple[str, ...]] = {
    "dev": FULL_CONVERSATIONS,
    "heldout": tuple(c for c in ALL_CONVERSATIONS if c not in FULL_CONVERSATIONS),
}


@dataclass(frozen=True)
class Message:
    id: int
    role: str
    text: str
    session: int


@dataclass
class Conversation:
    id: str
    group: str
    documents: tuple[Any, ...]
    messages: list[Message]
    questions: list[Any]  # ProbingQuestion, scored ones only
    unscored: int  # non-abstention questions without source ids


def groups_for(choice: str) -> list[str]:
    """``dev``, ``heldout`` or ``all`` (both)."""
    if choice == "all":
        return ["dev", "heldout"]
    if choice not in GROUPS:
        raise SystemExit(f"--conversations must be dev, heldout or all, not {choice!r}")
    return [choice]


def load_conversations(data: Path, groups: Sequence[str]) -> list[Conversation]:
    """Every conversation of the chosen groups, in group then numeric order."""
    wanted = [(g, c) for g in groups for c in GROUPS[g]]
    corpus = load_local(data, [c for _, c in wanted], known_bad_rubrics())
    out = []
    for group, cid in wanted:
        conv = corpus.conversations[cid]
        docs = tuple(strip_document(d) for d in session_documents(conv))
        messages = [Message(m.id, m.role, m.text, d.session_number) for d in docs for m in d.messages]
        messages.sort(key=lambda m: m.id)
        asked = [q for q in corpus.questions.values() if q.conversation_id == cid and q.ability != "abstention"]
        scored = [q for q in asked if q.source_message_ids]
        out.append(Conversation(cid, group, docs, messages, scored, len(asked) - len(scored)))
    return out


def recall(sources: set[int], ranked_ids: Iterable[int], k: int) -> float:
    """Share of ``sources`` among the first ``k`` distinct message ids of the ranking."""
    top: list[int] = []
    seen: set[int] = set()
    for mid in ranked_ids:
        if mid in seen:
            continue
        seen.add(mid)
        top.append(mid)
        if len(top) == k:
            break
    return len(sources & seen) / len(sources)


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n))."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    mean = sum(values) / n
    if n == 1:
        return mean, float("nan")
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


SMOKE_QUESTIONS = 4


def smoke_conversations(data: Path) -> list[Conversation]:
    """``--smoke``'s tiny input: the first dev conversation cut to its first session (about 60
    messages), with the first few questions whose source messages all lie in that session."""
    conv = load_conversations(data, ["dev"])[0]
    first = conv.documents[0]
    messages = [m for m in conv.messages if m.session == first.session_number]
    kept = {m.id for m in messages}
    questions = [q for q in conv.questions if set(q.source_message_ids) <= kept][:SMOKE_QUESTIONS]
    if not questions:
        raise SystemExit(f"smoke: conversation {conv.id} has no question answered in its first session")
    return [Conversation(conv.id, conv.group, (first,), messages, questions, 0)]

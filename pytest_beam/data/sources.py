"""What both sources of BEAM are reduced to, and the records built from it.

The Hugging Face parquet (100K, :mod:`pytest_beam.data.huggingface`) and a local directory (every
tier, :mod:`pytest_beam.data.local_copy`; 10M's plans joined by :mod:`pytest_beam.data.plans_10m`)
both give the same raw shape -- per conversation, a list of sessions (each a flat list of message
dicts) and the probing-question dict -- built into records by one function here, so they cannot
drift apart.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from .data_error import BeamDataError
from .ids import QuestionId
from .records import (
    ABILITIES,
    Conversation,
    Message,
    ProbingQuestion,
    ReferenceAnswer,
    Session,
)
from .repairs import repair_message

REFERENCE_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")

#: A chat turn, or a probing question, as upstream's file holds it before the records are built from
#: it (`message_from`, `question_from`). Open by nature: BEAM's files are JSON and Python literals
#: whose keys differ by tier and by ability (an answer is `answer`, `ideal_response`, ...); the
#: builders read the keys they know and say which one is missing.
RawItem: TypeAlias = dict[str, Any]


@dataclass(frozen=True)
class RawConversation:
    id: str
    sessions: list[list[RawItem]]
    probing_questions: dict[str, list[RawItem]]


@dataclass
class BeamCorpus:
    """Conversations, their questions and (apart) the reference answers."""

    source: str
    tier: str = "100K"
    conversations: dict[str, Conversation] = field(default_factory=dict)
    questions: dict[str, ProbingQuestion] = field(default_factory=dict)
    references: dict[str, ReferenceAnswer] = field(default_factory=dict)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_pin(path: Path, expected: str, fix: str) -> None:
    actual = sha256_file(path)
    if actual != expected:
        raise BeamDataError(
            f"sha256 mismatch for {path}: expected {expected}, got {actual}. {fix}"
        )


# ---------------------------------------------------------------- raw -> records

def _parse_date(anchor: str | None, where: str) -> dt.date | None:
    if anchor is None:
        return None
    try:
        return dt.datetime.strptime(anchor, "%B-%d-%Y").date()
    except ValueError as exc:
        raise BeamDataError(f"{where}: time anchor {anchor!r} is not Month-DD-YYYY") from exc


def _flatten_ids(source: Any) -> tuple[int, ...]:
    """Source ids come as a list, a dict of lists, or lists nested in lists (conv 4 and 13)."""
    found: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for inner in value.values():
                walk(inner)
        elif isinstance(value, (list, tuple)):
            for inner in value:
                walk(inner)
        elif value is not None:
            found.add(int(value))

    walk(source)
    return tuple(sorted(found))


def build_conversation(raw: RawConversation, where: str, tier: str = "100K") -> Conversation:
    sessions = []
    for number, messages in enumerate(raw.sessions, start=1):
        if not messages:
            raise BeamDataError(f"{where}: session {number} has no messages")
        date = _parse_date(messages[0].get("time_anchor"), f"{where} session {number}")
        records = []
        for m in messages:
            try:
                text = repair_message(raw.id, int(m["id"]), m["content"], tier)
                records.append(Message(id=int(m["id"]), role=m["role"], text=text))
            except (KeyError, TypeError, ValueError) as exc:
                if isinstance(exc, BeamDataError):
                    raise
                raise BeamDataError(f"{where}: malformed message {m.get('id')!r}: {exc}") from exc
        sessions.append(Session(number=number, date=date, messages=tuple(records)))
    ids = [m.id for s in sessions for m in s.messages]
    if ids != list(range(len(ids))):
        raise BeamDataError(f"{where}: message ids are not 0..{len(ids) - 1} without gaps")
    return Conversation(id=raw.id, sessions=tuple(sessions))


def build_questions(
    raw: RawConversation, where: str, known_bad: dict[str, str], tier: str = "100K"
) -> tuple[list[ProbingQuestion], list[ReferenceAnswer]]:
    if sorted(raw.probing_questions) != sorted(ABILITIES):
        raise BeamDataError(f"{where}: abilities {sorted(raw.probing_questions)} are not BEAM's ten")
    questions, references = [], []
    for ability in ABILITIES:
        for index, q in enumerate(raw.probing_questions[ability]):
            try:
                qid = str(QuestionId(raw.id, ability, index, tier))
                question = ProbingQuestion(
                    conversation_id=raw.id,
                    tier=tier,
                    ability=ability,
                    index=index,
                    question=q["question"],
                    rubric=tuple(q["rubric"]),
                    source_message_ids=_flatten_ids(q.get("source_chat_ids")),
                    known_bad_rubric=known_bad.get(qid),
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise BeamDataError(f"{where}: malformed question {ability}[{index}]: {exc}") from exc
            questions.append(question)
            key = next((k for k in REFERENCE_KEYS if k in q), None)
            if key is not None:
                references.append(ReferenceAnswer(question_id=question.id, key=key, text=str(q[key])))
    return questions, references


def build_corpus(source: str, raws: Iterable[tuple[RawConversation, str]], known_bad: dict[str, str],
                 tier: str = "100K") -> BeamCorpus:
    corpus = BeamCorpus(source=source, tier=tier)
    for raw, where in raws:
        corpus.conversations[raw.id] = build_conversation(raw, where, tier)
        questions, references = build_questions(raw, where, known_bad, tier)
        corpus.questions.update((q.id, q) for q in questions)
        corpus.references.update((r.question_id, r) for r in references)
    return corpus


def upstream_sessions(chat: Any, path: Path) -> list[list[RawItem]]:
    """A chat file's sessions in the upstream layout (each a list of turns) as flat message lists."""
    try:
        return [[m for turn in s["turns"] for m in turn] for s in chat]
    except (KeyError, TypeError) as exc:
        raise BeamDataError(f"{path}: not the upstream session layout") from exc

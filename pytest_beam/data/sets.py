"""The lite and full question sets, and the documents a memory system ingests for each."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from .errors import BeamDataError
from .records import Conversation, Document, ProbingQuestion, SystemQuestion
from .sources import BeamCorpus, load_huggingface, load_local

Mode = Literal["lite", "full"]
FULL_CONVERSATIONS: tuple[str, ...] = ("1", "4", "6", "13", "17")


def fixture_path(name: str) -> Path:
    """Files of the sets ship inside the package as `pytest_beam.fixtures` (the repo's fixtures/)."""
    return Path(str(resources.files("pytest_beam.fixtures").joinpath(name)))


def _read_fixture(name: str) -> dict:
    path = fixture_path(name)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BeamDataError(f"fixture file {path} is unreadable: {exc}") from exc


def known_bad_rubrics() -> dict[str, str]:
    return dict(_read_fixture("known_bad_rubric.json")["questions"])


def lite_spec() -> dict:
    return _read_fixture("lite.json")


def document_sha256(document: Document) -> str:
    return hashlib.sha256(document.model_dump_json().encode("utf-8")).hexdigest()


def session_documents(conversation: Conversation) -> list[Document]:
    return [
        Document(conversation_id=conversation.id, name=f"session-{s.number}", session_number=s.number,
                 session_date=s.date, messages=s.messages)
        for s in conversation.sessions
    ]


def slice_document(conversation: Conversation, message_ids: list[int]) -> Document:
    sessions = {conversation.session_of(i).number for i in message_ids}
    if len(sessions) != 1:
        raise BeamDataError(f"lite slice {message_ids} spans sessions {sorted(sessions)}; a slice is one session's")
    session = conversation.session_of(message_ids[0])
    by_id = {m.id: m for m in session.messages}
    return Document(
        conversation_id=conversation.id, name="slice-" + "-".join(map(str, message_ids)),
        session_number=session.number, session_date=session.date,
        messages=tuple(by_id[i] for i in message_ids),
    )


@dataclass(frozen=True)
class BenchmarkSet:
    mode: Mode
    source: str
    questions: tuple[ProbingQuestion, ...]
    documents: dict[str, tuple[Document, ...]]  # by conversation id

    def system_questions(self) -> list[SystemQuestion]:
        return [q.for_system() for q in self.questions]


def build_set(corpus: BeamCorpus, mode: Mode) -> BenchmarkSet:
    if mode == "lite":
        spec = lite_spec()
        cid = spec["conversation"]
        conversation = corpus.conversations[cid]
        documents = []
        for piece in spec["slices"]:
            document = slice_document(conversation, list(piece["message_ids"]))
            actual = document_sha256(document)
            if actual != piece["sha256"]:
                raise BeamDataError(
                    f"lite slice {document.name} of conversation {cid}: sha256 {actual} does not match "
                    f"{piece['sha256']} pinned in {fixture_path('lite.json')}; the data differs from BEAM's."
                )
            documents.append(document)
        questions = tuple(corpus.questions[qid] for qid in spec["questions"])
        return BenchmarkSet(mode, corpus.source, questions, {cid: tuple(documents)})
    if mode == "full":
        questions = tuple(q for q in corpus.questions.values() if q.conversation_id in FULL_CONVERSATIONS)
        documents = {cid: tuple(session_documents(corpus.conversations[cid])) for cid in FULL_CONVERSATIONS}
        return BenchmarkSet(mode, corpus.source, questions, documents)
    raise BeamDataError(f"unknown mode {mode!r}: choose lite or full")


def conversations_for(mode: Mode) -> tuple[str, ...]:
    return (lite_spec()["conversation"],) if mode == "lite" else FULL_CONVERSATIONS


def load_set(mode: Mode, data_dir: Path | None = None) -> BenchmarkSet:
    """The selected set from the local directory if given, else from Hugging Face."""
    known_bad = known_bad_rubrics()
    ids = conversations_for(mode)
    corpus = load_local(data_dir, ids, known_bad) if data_dir is not None else load_huggingface(ids, known_bad)
    return build_set(corpus, mode)

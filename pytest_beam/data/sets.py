"""The question sets (lite, full, complete, or any chosen conversations) and their documents.

``complete`` is the whole 100K split (20 conversations, 400 questions), the scope of published
BEAM tables; a conversation subset (``--beam-conversations=1,4,17``) narrows full or complete
to the conversations named, each built exactly as the full set builds its own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from .errors import BeamDataError
from .markers import strip_document
from .records import Conversation, Document, ProbingQuestion, ReferenceAnswer, SystemQuestion
from .sources import BeamCorpus, load_huggingface, load_local

Mode = Literal["lite", "full", "complete"]
MODES: tuple[str, ...] = ("lite", "full", "complete")
FULL_CONVERSATIONS: tuple[str, ...] = ("1", "4", "6", "13", "17")
ALL_CONVERSATIONS: tuple[str, ...] = tuple(str(n) for n in range(1, 21))


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
    # by question id: for the judge's calibration only; never handed to a memory system
    references: dict[str, ReferenceAnswer] = field(default_factory=dict)

    def system_questions(self) -> list[SystemQuestion]:
        return [q.for_system() for q in self.questions]


def build_set(corpus: BeamCorpus, mode: Mode, conversations: tuple[str, ...] | None = None,
              keep_markers: bool = False) -> BenchmarkSet:
    """The set of ``mode`` from a loaded corpus; ``conversations`` narrows full or complete.

    The documents come without the generator's plan markers (``markers.py``) unless
    ``keep_markers``; the lite pins are checked on the raw text, as BEAM published it.
    """
    bench = _build_raw_set(corpus, mode, conversations)
    if keep_markers:
        return bench
    documents = {cid: tuple(strip_document(d) for d in docs) for cid, docs in bench.documents.items()}
    return BenchmarkSet(bench.mode, bench.source, bench.questions, documents, bench.references)


def _build_raw_set(corpus: BeamCorpus, mode: Mode, conversations: tuple[str, ...] | None) -> BenchmarkSet:
    if mode == "lite":
        if conversations is not None:
            raise BeamDataError("a conversation subset applies to the full or complete mode, not to lite")
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
        return BenchmarkSet(mode, corpus.source, questions, {cid: tuple(documents)}, _references(corpus, questions))
    if mode in ("full", "complete"):
        wanted = conversations if conversations is not None else conversations_for(mode)
        missing = [cid for cid in wanted if cid not in corpus.conversations]
        if missing:
            raise BeamDataError(f"conversations {', '.join(missing)} were not loaded from {corpus.source}")
        chosen = set(wanted)
        questions = tuple(q for q in corpus.questions.values() if q.conversation_id in chosen)
        documents = {cid: tuple(session_documents(corpus.conversations[cid])) for cid in wanted}
        return BenchmarkSet(mode, corpus.source, questions, documents, _references(corpus, questions))
    raise BeamDataError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")


def _references(corpus: BeamCorpus, questions: tuple[ProbingQuestion, ...]) -> dict[str, ReferenceAnswer]:
    return {q.id: corpus.references[q.id] for q in questions if q.id in corpus.references}


def parse_conversations(text: str | None) -> tuple[str, ...] | None:
    """``"1,4,17"`` -> ``("1", "4", "17")``, in 100K-split order; ``None`` or blank -> ``None`` (no subset).

    Rejects what a typo would silently turn into a different benchmark: a non-number, a number
    outside 1..20, an empty entry, or a repeated one -- the message names the entry.
    """
    if text is None or not str(text).strip():
        return None
    chosen: list[int] = []
    for raw in str(text).split(","):
        entry = raw.strip()
        if not entry:
            raise BeamDataError(f"conversation list {text!r} has an empty entry; write e.g. 1,4,17")
        if not entry.isdigit():
            raise BeamDataError(f"conversation {entry!r} in {text!r} is not a number; the 100K split has conversations 1 to 20")
        number = int(entry)
        if not 1 <= number <= len(ALL_CONVERSATIONS):
            raise BeamDataError(f"conversation {entry} in {text!r} does not exist; the 100K split has conversations 1 to 20")
        if number in chosen:
            raise BeamDataError(f"conversation {entry} is listed twice in {text!r}")
        chosen.append(number)
    return tuple(str(n) for n in sorted(chosen))


def conversations_for(mode: Mode, conversations: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The conversations a mode loads; a subset replaces full's or complete's own list (not lite's)."""
    if mode == "lite":
        if conversations is not None:
            raise BeamDataError("a conversation subset applies to the full or complete mode, not to lite")
        return (lite_spec()["conversation"],)
    if mode == "full":
        return conversations if conversations is not None else FULL_CONVERSATIONS
    if mode == "complete":
        return conversations if conversations is not None else ALL_CONVERSATIONS
    raise BeamDataError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")


def load_set(mode: Mode, data_dir: Path | None = None, conversations: str | tuple[str, ...] | None = None,
             keep_markers: bool = False) -> BenchmarkSet:
    """The selected set from the local directory if given, else from Hugging Face.

    ``conversations`` is a subset for full or complete mode, as ``"1,4,17"`` or ``("1", "4", "17")``;
    ``keep_markers`` keeps the generator's plan markers in the chat (default: stripped).
    """
    subset = parse_conversations(",".join(conversations) if isinstance(conversations, tuple) else conversations)
    known_bad = known_bad_rubrics()
    ids = conversations_for(mode, subset)
    corpus = load_local(data_dir, ids, known_bad) if data_dir is not None else load_huggingface(ids, known_bad)
    return build_set(corpus, mode, subset, keep_markers)

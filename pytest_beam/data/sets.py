"""The question sets (lite, full, complete, or any chosen conversations) and their documents.

``complete`` is a tier's whole split (100K: 20 conversations, 400 questions; 500K and 1M: 35 and
700; 10M: 10 and 200), the scope of published BEAM tables; ``full`` is the tier's five chosen
conversations (``tiers.py`` says which and why); ``lite`` is 100K's. A conversation subset
(``--beam-conversations=1,4,17``) narrows full or complete to the conversations named, each built
exactly as the full set builds its own. A copy that lacks some chats of a tier (the offline copy
holds 9 of 1M's 35) gives the full or complete set of those it holds, and the set names the
others (``missing``); a subset that names a missing chat is an error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Literal, TypedDict, cast

from .data_error import BeamDataError
from .huggingface import load_huggingface
from .ids import DEFAULT_TIER
from .local_copy import load_local, missing_chats, missing_line
from .markers import strip_document
from .records import Conversation, Document, ProbingQuestion, ReferenceAnswer, SystemQuestion
from .sources import BeamCorpus
from .tiers import tier as tier_of

Mode = Literal["lite", "full", "complete"]
MODES: tuple[str, ...] = ("lite", "full", "complete")
FULL_CONVERSATIONS: tuple[str, ...] = tier_of("100K").full
ALL_CONVERSATIONS: tuple[str, ...] = tier_of("100K").conversations


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


class LiteSlice(TypedDict):
    session: int
    message_ids: list[int]
    sha256: str  # of the slice document's canonical JSON (document_sha256)


class LiteSpec(TypedDict):
    """fixtures/lite.json: the lite set's conversation, its questions and the slices it ingests."""

    about: str
    conversation: str
    questions: list[str]
    slices: list[LiteSlice]


def lite_spec() -> LiteSpec:
    return cast("LiteSpec", _read_fixture("lite.json"))


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
    tier: str = DEFAULT_TIER
    missing: tuple[str, ...] = ()  # conversations of the set whose chats the data lacks: left out
    missing_note: str | None = None  # one line: which, and how to get them
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
    return replace(bench, documents=documents)


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
        return BenchmarkSet(mode, corpus.source, questions, {cid: tuple(documents)},
                            references=_references(corpus, questions))
    if mode in ("full", "complete"):
        wanted = conversations if conversations is not None else tuple(
            c for c in conversations_for(mode, tier=corpus.tier) if c in corpus.conversations)
        missing = [cid for cid in wanted if cid not in corpus.conversations]
        if missing:
            raise BeamDataError(f"conversations {', '.join(missing)} were not loaded from {corpus.source}")
        chosen = set(wanted)
        questions = tuple(q for q in corpus.questions.values() if q.conversation_id in chosen)
        by_conversation = {cid: tuple(session_documents(corpus.conversations[cid])) for cid in wanted}
        return BenchmarkSet(mode, corpus.source, questions, by_conversation, corpus.tier,
                            references=_references(corpus, questions))
    raise BeamDataError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")


def _references(corpus: BeamCorpus, questions: tuple[ProbingQuestion, ...]) -> dict[str, ReferenceAnswer]:
    return {q.id: corpus.references[q.id] for q in questions if q.id in corpus.references}


def parse_conversations(text: str | None, tier: str | None = DEFAULT_TIER) -> tuple[str, ...] | None:
    """``"1,4,17"`` -> ``("1", "4", "17")``, in the split's order; ``None`` or blank -> ``None`` (no subset).

    Rejects what a typo would silently turn into a different benchmark: a non-number, a number
    outside the tier's conversations (1..20 on 100K, 1..35 on 500K and 1M, 1..10 on 10M; ``tier``
    None checks the numbers only), an empty entry, or a repeated one -- the message names the entry.
    """
    if text is None or not str(text).strip():
        return None
    split = None if tier is None else tier_of(tier)
    span = "" if split is None else f"the {split.name} split has conversations 1 to {len(split.conversations)}"
    chosen: list[int] = []
    for raw in str(text).split(","):
        entry = raw.strip()
        if not entry:
            raise BeamDataError(f"conversation list {text!r} has an empty entry; write e.g. 1,4,17")
        if not entry.isdigit():
            raise BeamDataError(f"conversation {entry!r} in {text!r} is not a number"
                                + (f"; {span}" if span else "; write e.g. 1,4,17"))
        number = int(entry)
        if number < 1 or (split is not None and number > len(split.conversations)):
            raise BeamDataError(f"conversation {entry} in {text!r} does not exist"
                                + (f"; {span}" if span else "; conversations count from 1"))
        if number in chosen:
            raise BeamDataError(f"conversation {entry} is listed twice in {text!r}")
        chosen.append(number)
    return tuple(str(n) for n in sorted(chosen))


def conversations_for(mode: Mode, conversations: tuple[str, ...] | None = None,
                      tier: str = DEFAULT_TIER) -> tuple[str, ...]:
    """The conversations a mode loads; a subset replaces full's or complete's own list (not lite's)."""
    if mode == "lite":
        if conversations is not None:
            raise BeamDataError("a conversation subset applies to the full or complete mode, not to lite")
        if tier != DEFAULT_TIER:
            raise BeamDataError(f"the lite set is 100K's; the {tier} tier has full and complete sets")
        return (lite_spec()["conversation"],)
    if mode == "full":
        return conversations if conversations is not None else tier_of(tier).full
    if mode == "complete":
        return conversations if conversations is not None else tier_of(tier).conversations
    raise BeamDataError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")


def load_set(mode: Mode, data_dir: Path | None = None, conversations: str | tuple[str, ...] | None = None,
             keep_markers: bool = False, tier: str = DEFAULT_TIER) -> BenchmarkSet:
    """The selected set of ``tier`` from the local directory if given, else from Hugging Face (100K).

    ``conversations`` is a subset for full or complete mode, as ``"1,4,17"`` or ``("1", "4", "17")``;
    ``keep_markers`` keeps the generator's plan markers in the chat (default: stripped). Without a
    subset, conversations whose chats the directory lacks are left out and named (``missing``).
    """
    subset = parse_conversations(",".join(conversations) if isinstance(conversations, tuple) else conversations,
                                 tier=tier)
    known_bad = known_bad_rubrics()
    ids = conversations_for(mode, subset, tier)
    if data_dir is None:
        corpus = load_huggingface(ids, known_bad, tier=tier)
        return build_set(corpus, mode, subset, keep_markers)
    missing = missing_chats(data_dir, tier, ids)
    note = None
    if missing and subset is not None:
        from .local_copy import how_to_get

        raise BeamDataError(f"--beam-conversations names {tier} conversations whose chats are not in {data_dir} "
                            f"({', '.join(missing)}); {how_to_get(tier)}")
    if missing:
        if len(missing) == len(ids):
            from .local_copy import how_to_get

            raise BeamDataError(f"no conversation of the {tier} {mode} set has its chat in {data_dir} "
                                f"(chats/{tier}/<n>/...); {how_to_get(tier)}")
        note = missing_line(Path(data_dir), tier, missing, len(ids))
    present = tuple(c for c in ids if c not in missing)
    corpus = load_local(data_dir, present, known_bad, tier=tier)
    bench = build_set(corpus, mode, subset, keep_markers)
    return replace(bench, missing=tuple(missing), missing_note=note)

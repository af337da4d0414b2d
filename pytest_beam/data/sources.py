"""The two sources of BEAM 100K: the Hugging Face parquet and a local directory.

Both are reduced to the same raw shape — per conversation, a list of sessions (each a flat list
of message dicts) and the probing-question dict — and built into records by one function, so
they cannot drift apart.
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import pins
from .errors import BeamDataError
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


@dataclass(frozen=True)
class RawConversation:
    id: str
    sessions: list[list[dict[str, Any]]]
    probing_questions: dict[str, list[dict[str, Any]]]


@dataclass
class BeamCorpus:
    """Conversations, their questions and (apart) the reference answers."""

    source: str
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


def git_blob_sha1(path: Path) -> str:
    """What `git hash-object FILE` prints: sha1 of "blob <size>\\0" and the content."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_upstream_file(path: Path, pin: pins.FilePin) -> None:
    """By sha256 where one is pinned, else by the upstream git blob id (a clone of the upstream
    repository is then checked byte for byte too)."""
    fix = "The file differs from BEAM at the pinned commit; restore it."
    if pin.sha256 is not None:
        check_pin(path, pin.sha256, fix)
        return
    actual = git_blob_sha1(path)
    if actual != pin.git_blob_sha1:
        raise BeamDataError(
            f"git blob id mismatch for {path}: expected {pin.git_blob_sha1} (upstream "
            f"{pin.path} at {pins.UPSTREAM_COMMIT[:12]}), got {actual}. {fix}"
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


def build_conversation(raw: RawConversation, where: str) -> Conversation:
    sessions = []
    for number, messages in enumerate(raw.sessions, start=1):
        if not messages:
            raise BeamDataError(f"{where}: session {number} has no messages")
        date = _parse_date(messages[0].get("time_anchor"), f"{where} session {number}")
        records = []
        for m in messages:
            try:
                text = repair_message(raw.id, int(m["id"]), m["content"])
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
    raw: RawConversation, where: str, known_bad: dict[str, str]
) -> tuple[list[ProbingQuestion], list[ReferenceAnswer]]:
    if sorted(raw.probing_questions) != sorted(ABILITIES):
        raise BeamDataError(f"{where}: abilities {sorted(raw.probing_questions)} are not BEAM's ten")
    questions, references = [], []
    for ability in ABILITIES:
        for index, q in enumerate(raw.probing_questions[ability]):
            try:
                question = ProbingQuestion(
                    conversation_id=raw.id,
                    ability=ability,
                    index=index,
                    question=q["question"],
                    rubric=tuple(q["rubric"]),
                    source_message_ids=_flatten_ids(q.get("source_chat_ids")),
                    known_bad_rubric=known_bad.get(f"conv{raw.id}:{ability}:{index}"),
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise BeamDataError(f"{where}: malformed question {ability}[{index}]: {exc}") from exc
            questions.append(question)
            key = next((k for k in REFERENCE_KEYS if k in q), None)
            if key is not None:
                references.append(ReferenceAnswer(question_id=question.id, key=key, text=str(q[key])))
    return questions, references


def build_corpus(source: str, raws: Iterable[tuple[RawConversation, str]], known_bad: dict[str, str]) -> BeamCorpus:
    corpus = BeamCorpus(source=source)
    for raw, where in raws:
        corpus.conversations[raw.id] = build_conversation(raw, where)
        questions, references = build_questions(raw, where, known_bad)
        corpus.questions.update((q.id, q) for q in questions)
        corpus.references.update((r.question_id, r) for r in references)
    return corpus


# ---------------------------------------------------------------- local directory

def load_local(root: Path, conversation_ids: Iterable[str], known_bad: dict[str, str],
               pinned: dict[str, pins.FilePin] | None = None) -> BeamCorpus:
    """Read conversations from a directory in the upstream layout, every file hash-checked."""
    pinned = pins.UPSTREAM_FILES if pinned is None else pinned
    root = Path(root)
    if not root.is_dir():
        what = ("is a file, not a directory" if root.is_file() else
                "is not a directory" if root.exists() else "does not exist")
        raise BeamDataError(
            f"BEAM data directory {root} {what}. Give a directory in the upstream layout "
            "(chats/100K/<n>/...) with --beam-data=DIR, BEAM_DATA=DIR or the ini key beam_data; or "
            "leave it unset (an empty --beam-data= or BEAM_DATA= also means unset) to use the Hugging "
            "Face source."
        )
    raws = []
    for cid in conversation_ids:
        files = {}
        for rel in (f"chats/100K/{cid}/chat.json", f"chats/100K/{cid}/probing_questions/probing_questions.json"):
            path = root / rel
            if not path.is_file():
                raise BeamDataError(f"{path} is missing from the BEAM data directory {root}.")
            if rel not in pinned:
                raise BeamDataError(f"{rel} is not pinned in pytest_beam/data/{pins.PINS_FILE}.")
            check_upstream_file(path, pinned[rel])
            try:
                files[rel] = json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise BeamDataError(f"{path} is not valid JSON: {exc}") from exc
        chat, probing = files.values()
        try:
            sessions = [[m for turn in s["turns"] for m in turn] for s in chat]
        except (KeyError, TypeError) as exc:
            raise BeamDataError(f"{root / f'chats/100K/{cid}/chat.json'}: not the upstream session layout") from exc
        raws.append((RawConversation(cid, sessions, probing), str(root / f"chats/100K/{cid}")))
    return build_corpus(f"local:{root}", raws, known_bad)


# ---------------------------------------------------------------- Hugging Face parquet

def unreachable(url: str, timeout: float = 2.0) -> str | None:
    """Why `url`'s host cannot be reached (name lookup or TCP connect within `timeout`), else None.

    huggingface_hub retries a refused connection or a failed name lookup five times (25 to 32 s)
    before its error; one short probe first makes an offline run fail at once.
    """
    import socket
    import threading
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    problem: list[str] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as exc:
            problem.append(f"{type(exc).__name__}: {exc}")

    thread = threading.Thread(target=probe, daemon=True)  # getaddrinfo has no timeout of its own
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return f"no answer from {host}:{port} within {timeout:g} s"
    return problem[0] if problem else None


def _not_cached(why: str) -> BeamDataError:
    return BeamDataError(
        f"Could not get {pins.HF_REPO_ID}/{pins.HF_FILENAME}@{pins.HF_REVISION[:12]} from Hugging "
        f"Face and it is not cached ({why}). With no network, pass --beam-data=DIR (a copy in the "
        "upstream layout, e.g. ../shared/beam), or set BEAM_DATA=DIR.")


def download_parquet(cache_dir: Path | None = None) -> Path:
    """Fetch the pinned parquet through huggingface_hub (its cache makes later runs offline)."""
    try:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise BeamDataError("huggingface_hub is not installed; pip install pytest-beam") from exc
    fetch = dict(repo_id=pins.HF_REPO_ID, repo_type="dataset", filename=pins.HF_FILENAME,
                 revision=pins.HF_REVISION, cache_dir=cache_dir)
    try:  # a cached copy needs no network at all
        return Path(hf_hub_download(**fetch, local_files_only=True))
    except (LocalEntryNotFoundError, OSError):
        pass
    problem = unreachable(constants.ENDPOINT)
    if problem is not None:
        raise _not_cached(f"cannot reach {constants.ENDPOINT}: {problem}")
    try:
        return Path(hf_hub_download(**fetch))
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as exc:
        raise _not_cached(f"{type(exc).__name__}: {exc}") from exc


def load_parquet(path: Path, conversation_ids: Iterable[str], known_bad: dict[str, str],
                 expected_sha256: str = pins.HF_SHA256) -> BeamCorpus:
    path = Path(path)
    check_pin(path, expected_sha256, "Delete it from the Hugging Face cache and run again, or pass --beam-data.")
    import pyarrow.parquet as pq

    wanted = list(conversation_ids)
    try:
        table = pq.read_table(path, columns=["conversation_id", "chat", "probing_questions"])
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise BeamDataError(f"{path} is not a readable BEAM parquet: {exc}") from exc
    # Row i is conversation str(i + 1): the split's own order is the id.
    rows = {str(i + 1): r for i, r in enumerate(table.to_pylist())}
    raws = []
    for cid in wanted:
        if cid not in rows:
            raise BeamDataError(f"{path} has no conversation {cid}")
        row = rows[cid]
        try:
            probing = ast.literal_eval(row["probing_questions"])
        except (ValueError, SyntaxError) as exc:
            raise BeamDataError(f"{path}: probing_questions of conversation {cid} does not parse: {exc}") from exc
        sessions = [[{k: v for k, v in m.items() if v is not None} for m in s] for s in row["chat"]]
        raws.append((RawConversation(cid, sessions, probing), f"{path}#conversation {cid}"))
    return build_corpus(f"hf:{pins.HF_REPO_ID}@{pins.HF_REVISION}", raws, known_bad)


def load_huggingface(conversation_ids: Iterable[str], known_bad: dict[str, str],
                     download: Callable[[], Path] = download_parquet) -> BeamCorpus:
    return load_parquet(download(), conversation_ids, known_bad)

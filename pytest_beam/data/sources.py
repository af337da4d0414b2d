"""The two sources of BEAM: the Hugging Face parquet (100K) and a local directory (every tier).

Both are reduced to the same raw shape — per conversation, a list of sessions (each a flat list
of message dicts) and the probing-question dict — and built into records by one function, so
they cannot drift apart.

10M's conversations are stored upstream as ten plans, ``chats/10M/<n>/plan-<k>/chat.json``, each
a chat in the usual layout whose message ids start at 0, beside the joined
``chats/10M/<n>/chat.json`` that BEAM's own code reads (``src/beam/download_dataset.py``,
``combine_10m_chats``: a list ``[{"plan-1": sessions}, {"plan-2": sessions}, ...]`` in plan order,
each plan's ids moved up by the previous plan's last id + 1, so ids run 0..N-1 across the
conversation, the ids the probing questions' ``source_chat_ids`` cite; ``answer_probing_questions``
walks plans, then sessions, in that order). The joined file is read when it is there; otherwise the
plan folders are joined the same way. The probing questions live at the conversation's level,
``chats/10M/<n>/probing_questions/probing_questions.json``, as on every tier.
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
from .ids import QuestionId
from .repairs import repair_message
from .tiers import UPSTREAM_URL, ranges, tier as tier_of

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


# ---------------------------------------------------------------- local directory

def _not_a_directory(root: Path) -> BeamDataError:
    what = ("is a file, not a directory" if root.is_file() else
            "is not a directory" if root.exists() else "does not exist")
    return BeamDataError(
        f"BEAM data directory {root} {what}. Give a directory in the upstream layout "
        "(chats/100K/<n>/...) with --beam-data=DIR, BEAM_DATA=DIR or the ini key beam_data; or "
        "leave it unset (an empty --beam-data= or BEAM_DATA= also means unset) to use the Hugging "
        "Face source."
    )


def how_to_get(tier: str) -> str:
    """Where the files of a tier come from when a copy lacks them: a clone of the upstream repository,
    every file of which is checked against its git blob id."""
    return (f"to run them, clone the upstream repository at the pinned commit (git clone {UPSTREAM_URL} BEAM "
            f"&& git -C BEAM checkout {pins.UPSTREAM_COMMIT[:12]}) and pass --beam-data=BEAM: each file is "
            f"checked against its git blob id in pytest_beam/data/{pins.PINS_FILE}")


def chat_present(root: Path, tier: str, conversation: str) -> bool:
    """Whether the copy at ``root`` holds the conversation's chat (10M: the joined file or its plans)."""
    spec = tier_of(tier)
    if (root / spec.chat_path(conversation)).is_file():
        return True
    return spec.layout == "plans" and (root / spec.plan_path(conversation, 0)).is_file()


def _read_json(path: Path, rel: str, root: Path, pinned: dict[str, pins.FilePin]) -> Any:
    if not path.is_file():
        raise BeamDataError(f"{path} is missing from the BEAM data directory {root}.")
    if rel not in pinned:
        raise BeamDataError(f"{rel} is not pinned in pytest_beam/data/{pins.PINS_FILE}.")
    check_upstream_file(path, pinned[rel])
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BeamDataError(f"{path} is not valid JSON: {exc}") from exc


def _sessions(chat: Any, path: Path) -> list[list[dict[str, Any]]]:
    try:
        return [[m for turn in s["turns"] for m in turn] for s in chat]
    except (KeyError, TypeError) as exc:
        raise BeamDataError(f"{path}: not the upstream session layout") from exc


def joined_plan_sessions(joined: Any, path: Path) -> list[list[dict[str, Any]]]:
    """10M's joined chat.json as BEAM's code walks it: ``[{"plan-1": sessions}, ...]``, plans in list order."""
    if not isinstance(joined, list) or not all(isinstance(p, dict) and len(p) == 1 for p in joined):
        raise BeamDataError(f"{path}: not 10M's joined layout, a list of {{\"plan-<k>\": sessions}}")
    return [session for plan in joined for session in _sessions(next(iter(plan.values())), path)]


def join_plans(plans: list[list[list[dict[str, Any]]]]) -> list[list[dict[str, Any]]]:
    """The plans' sessions as one conversation, each plan's ids moved up by the previous plan's last id
    + 1 (``combine_10m_chats`` upstream; the plans' own files count from 0), without changing them."""
    joined: list[list[dict[str, Any]]] = []
    offset = 0
    for number, sessions in enumerate(plans):
        moved = [[{**m, "id": int(m["id"]) + offset} if "id" in m else dict(m) for m in s] for s in sessions]
        joined.extend(moved)
        last = [m["id"] for s in moved for m in s if "id" in m]
        if number + 1 < len(plans) and last:
            offset = int(last[-1]) + 1
    return joined


def plan_numbers(root: Path, tier: str, conversation: str, pinned: dict[str, pins.FilePin]) -> list[int]:
    """The plans a 10M conversation has: those the pins list for it (a missing one is an error, never a
    shorter conversation), else the folders present."""
    spec = tier_of(tier)
    prefix = f"chats/{tier}/{conversation}/plan-"
    listed = sorted(int(p[len(prefix):].split("/")[0]) for p in pinned
                    if p.startswith(prefix) and p.endswith("/chat.json"))
    if listed:
        return listed
    folder = root / f"chats/{tier}/{conversation}"
    found = sorted(int(d.name[5:]) for d in folder.glob("plan-*") if d.name[5:].isdigit())
    return [k for k in found if (root / spec.plan_path(conversation, k)).is_file()]


def read_chat(root: Path, tier: str, conversation: str, pinned: dict[str, pins.FilePin]) -> tuple[list[list[dict[str, Any]]], str]:
    """One conversation's sessions, every file hash-checked, and where it was read from."""
    spec = tier_of(tier)
    rel = spec.chat_path(conversation)
    path = root / rel
    if spec.layout == "chat" or path.is_file():
        chat = _read_json(path, rel, root, pinned)
        return (joined_plan_sessions(chat, path) if spec.layout == "plans" else _sessions(chat, path)), str(path)
    plans = []
    for k in plan_numbers(root, tier, conversation, pinned):
        plan_rel = spec.plan_path(conversation, k)
        plans.append(_sessions(_read_json(root / plan_rel, plan_rel, root, pinned), root / plan_rel))
    if not plans:
        raise BeamDataError(f"{path} is missing from the BEAM data directory {root}, and so are its plans "
                            f"({spec.plan_path(conversation, 0)}, ...); {how_to_get(tier)}.")
    return join_plans(plans), str(root / f"chats/{tier}/{conversation}/plan-*")


def load_local(root: Path, conversation_ids: Iterable[str], known_bad: dict[str, str],
               pinned: dict[str, pins.FilePin] | None = None, tier: str = "100K") -> BeamCorpus:
    """Read conversations of ``tier`` from a directory in the upstream layout, every file hash-checked."""
    pinned = pins.UPSTREAM_FILES if pinned is None else pinned
    root = Path(root)
    if not root.is_dir():
        raise _not_a_directory(root)
    spec = tier_of(tier)
    raws = []
    for cid in conversation_ids:
        sessions, where = read_chat(root, tier, cid, pinned)
        rel = spec.questions_path(cid)
        probing = _read_json(root / rel, rel, root, pinned)
        raws.append((RawConversation(cid, sessions, probing), where))
    return build_corpus(f"local:{root}", raws, known_bad, tier)


def missing_chats(root: Path, tier: str, conversation_ids: Iterable[str]) -> list[str]:
    """The conversations whose chat the copy at ``root`` lacks (its questions may be there: 1M here)."""
    root = Path(root)
    if not root.is_dir():
        raise _not_a_directory(root)
    return [cid for cid in conversation_ids if not chat_present(root, tier, cid)]


def missing_line(root: Path, tier: str, missing: list[str], total: int) -> str:
    """One line: which conversations of a tier a run leaves out, and how to get them."""
    return (f"pytest-beam: {tier}: {len(missing)} of {total} conversations have no chat in {root} "
            f"({ranges(missing)}), so their {20 * len(missing)} questions are left out; {how_to_get(tier)}")


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
                     download: Callable[[], Path] = download_parquet, tier: str = "100K") -> BeamCorpus:
    if tier != "100K":
        raise BeamDataError(huggingface_tier_problem(tier))
    return load_parquet(download(), conversation_ids, known_bad)


def huggingface_tier_problem(tier: str) -> str:
    """What the Hugging Face source can serve (100K, at the pinned revision and hash) and cannot."""
    where = (f"the 10M tier is a separate dataset upstream (Mohammadta/BEAM-10M)" if tier == "10M" else
             f"the {tier} split of {pins.HF_REPO_ID} has no pinned file or hash here")
    spec = tier_of(tier)
    return (f"the Hugging Face source serves the 100K tier only ({pins.HF_REPO_ID}@{pins.HF_REVISION[:12]}, "
            f"{pins.HF_FILENAME}, sha256 {pins.HF_SHA256[:12]}...); {where}, so a download could not be "
            f"checked byte for byte. Pass --beam-data=DIR with a copy in the upstream layout "
            f"({spec.chat_path('<n>')}"
            + (f" or {spec.plan_path('<n>', 0).replace('plan-0', 'plan-<k>')}" if spec.layout == "plans" else "")
            + f", {spec.questions_path('<n>')}); {how_to_get(tier)}")

"""What the outside systems of issue 44 share: the chat as session documents, offline tokens, their calls.

Hindsight, Cognee, LightRAG and neo4j-graphrag read documents, not messages: each gets a BEAM
session as one document, in order, with the session's date, and each message in it tagged with its
BEAM id. What they recall is a piece of such a document (a chunk) or something derived from pieces;
`Transcript.messages_in` maps a piece back to the messages whose text it overlaps, so a recalled
memory names the messages it came from (evidence recall) at the granularity the system keeps.

tiktoken downloads its vocabularies on first use; several of these libraries count tokens with it.
`seed_tiktoken` writes the project's own verified `cl100k_base` where tiktoken looks first
(`TIKTOKEN_CACHE_DIR`, under the sha1 of the vocabulary's address), so nothing is fetched; an
encoding other than cl100k_base still would be, and `refuse_downloads` says which before it is.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..data.records import Document
from ..system import MemorySystem, SystemContext
from .children.protocol import close_loop
from .recalled import Turn, harness_relay, turns

T = TypeVar("T")

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
# What a library's tokenizer is told to be, so that tiktoken maps it to cl100k_base (the one shipped here)
CL100K_MODEL = "gpt-4"


def seed_tiktoken(folder: Path) -> Path:
    """A tiktoken cache folder holding the project's verified cl100k_base; returns the folder."""
    from ..memory.pinned import verified
    from ..memory.tokens import VOCABULARY_PATH, VOCABULARY_SHA256

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if not target.is_file():
        shutil.copyfile(verified(VOCABULARY_PATH, VOCABULARY_SHA256), target)
    return folder


def use_seeded_tiktoken() -> None:
    """Point this process's tiktoken at a folder seeded with cl100k_base (it reads the variable at each
    load); the folder lives in the project's cache, beside its other offline files."""
    from ..paths import cache_root

    os.environ["TIKTOKEN_CACHE_DIR"] = str(seed_tiktoken(cache_root() / "tiktoken"))


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    turn: Turn


@dataclass(frozen=True)
class Transcript:
    """One session as the text a document system reads, with where each message lies in it."""

    session: int
    date: dt.date | None
    text: str
    spans: tuple[Span, ...]

    @property
    def message_ids(self) -> tuple[int, ...]:
        return tuple(s.turn.id for s in self.spans)

    def messages_in(self, piece: str) -> tuple[int, ...]:
        """The messages whose text the piece overlaps, where the piece lies in this transcript."""
        at = self.text.find(piece) if piece else -1
        if at < 0:
            return ()
        end = at + len(piece)
        return tuple(s.turn.id for s in self.spans if s.start < end and at < s.end)


_MESSAGE_ID = re.compile(r'"message_id":\s*(\d+)')
_JSON_SYNTAX = re.compile(r'\{"message_id":\s*\d+,\s*"role":\s*"[a-z]+",\s*"content":\s*"|"\}\s*,?\s*|^\[|\]$')
_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|.)')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "u" and len(m.group(1)) == 5
                       else _ESCAPES.get(m.group(1), m.group(1)), text)


def messages_in_json(transcript: Transcript, chunk: str) -> tuple[int, ...]:
    """The messages a chunk of a JSON transcript holds, where the system re-serialized and cut it
    (Hindsight chunks a retained JSON list message by message, a long message in pieces): the ids
    it names, and the messages whose text holds one of its pieces of text."""
    ids = {int(i) for i in _MESSAGE_ID.findall(chunk)}
    for piece in _JSON_SYNTAX.split(chunk):
        text = _unescape(piece).strip()
        if len(text) >= 20:
            probe = text[:200]
            ids.update(s.turn.id for s in transcript.spans if probe in s.turn.text or text[-200:] in s.turn.text)
    known = set(transcript.message_ids)
    return tuple(sorted(ids & known))


def header(session: int, date: dt.date | None) -> str:
    return f"Chat session {session}, {date.isoformat() if date else 'undated'}"


def render_turn(turn: Turn) -> str:
    return f"[message {turn.id}] {turn.role}: {turn.text}"


def plain_transcripts(documents: Sequence[Document]) -> list[Transcript]:
    """Each session as a header line and its messages, one paragraph each, sessions in order."""
    by_session: dict[int, list[Turn]] = {}
    for turn in turns(documents):
        by_session.setdefault(turn.session, []).append(turn)
    out = []
    for session, chat in by_session.items():
        text = header(session, chat[0].date) + "\n\n"
        spans = []
        for k, turn in enumerate(chat):
            piece = render_turn(turn)
            spans.append(Span(len(text), len(text) + len(piece), turn))
            text += piece + ("\n\n" if k + 1 < len(chat) else "")
        out.append(Transcript(session, chat[0].date, text, tuple(spans)))
    return out


def json_transcripts(documents: Sequence[Document]) -> list[Transcript]:
    """Each session as a JSON list of its messages (how Hindsight's own benchmarks retain a session)."""
    by_session: dict[int, list[Turn]] = {}
    for turn in turns(documents):
        by_session.setdefault(turn.session, []).append(turn)
    out = []
    for session, chat in by_session.items():
        text, spans = "[", []
        for k, turn in enumerate(chat):
            piece = json.dumps({"message_id": turn.id, "role": turn.role, "content": turn.text}, ensure_ascii=False)
            spans.append(Span(len(text), len(text) + len(piece), turn))
            text += piece + (", " if k + 1 < len(chat) else "")
        out.append(Transcript(session, chat[0].date, text + "]", tuple(spans)))
    return out


def sources_of(piece: str, transcripts: Sequence[Transcript]) -> tuple[tuple[int, ...], Transcript | None]:
    """The message ids a piece of text came from, and its session (the first transcript holding it)."""
    for transcript in transcripts:
        ids = transcript.messages_in(piece)
        if ids:
            return ids, transcript
    return (), None


class LibraryCalls:
    """Runs one outside library's calls: on its own event loop for coroutines, and with the relay's
    kept failure (spend cap, cassette miss, endpoint) raised as itself instead of the library's
    wrapped error, so the harness stops the run the way it stops the built-in system."""

    def __init__(self, context: SystemContext, system: str) -> None:
        self.context = context
        self.system = system
        self.loop: asyncio.AbstractEventLoop | None = None

    def _do(self, work: Coroutine[Any, Any, T] | Callable[[], T]) -> T:
        if asyncio.iscoroutine(work):
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
            return self.loop.run_until_complete(work)
        assert callable(work)
        return work()

    def run(self, what: str, work: Coroutine[Any, Any, T] | Callable[[], T]) -> T:
        relay = harness_relay(self.context)
        try:
            result = self._do(work)
        except Exception as exc:
            relay.raise_failure(self.system, exc)
            raise RuntimeError(f"{self.system} {what} failed: {type(exc).__name__}: {exc}") from exc
        relay.raise_failure(self.system)  # the library logged a failed call and went on: the harness does not
        return result

    def run_or_lose(self, what: str, work: Coroutine[Any, Any, T] | Callable[[], T],
                    unusable: Callable[[BaseException], bool], lost: list[str]) -> T | None:
        """As `run`; but a step the library gave up on because of what the model wrote (`unusable`
        says which errors those are) returns None with its cause appended to `lost`: counted as an
        empty extraction, as the built-in system counts a chunk whose reply fails its schema."""
        relay = harness_relay(self.context)
        try:
            result = self._do(work)
        except Exception as exc:
            relay.raise_failure(self.system, exc)
            if unusable(exc):
                lost.append(f"{what}: {first_line(exc)}")
                return None
            raise RuntimeError(f"{self.system} {what} failed: {type(exc).__name__}: {exc}") from exc
        relay.raise_failure(self.system)
        return result

    def close(self) -> None:
        """Stop what the library left running on its loop (worker tasks, health checks), then the loop."""
        loop, self.loop = self.loop, None
        if loop is not None:
            close_loop(loop)


class OutsideSystem(MemorySystem):
    """What every outside system shares: the context the harness gave it, and the name its library's
    calls are metered, capped and replayed under (the run's --beam-system name for it)."""

    context: SystemContext

    @property
    def system_name(self) -> str:
        return self.context.system_name or self.name


def remove_tree(path: Path) -> None:
    """A system's own storage, removed with the conversation (nothing kept between runs)."""
    if os.environ.get("BEAM_KEEP_SYSTEM_DIRS"):
        return
    shutil.rmtree(path, ignore_errors=True)


def first_line(exc: BaseException, limit: int = 200) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:limit]}"

"""Cutting documents into chunks of about `chunk_tokens` tokens, in message order.

A chunk never spans two documents (so it has exactly one session number and date), and is cut
only between messages, unless one message alone is longer than a chunk: then that message is cut
into pieces, each keeping its message id (and its part number). Chunk ids are deterministic:
`<conversation>:s<session>:m<first id>.<part>-m<last id>.<part>`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from ..data.records import Document
from .tokens import count_tokens, split_by_tokens

DEFAULT_CHUNK_TOKENS = 1000


@dataclass(frozen=True)
class Piece:
    """A whole message (part 1 of 1) or one part of a message longer than a chunk."""

    message_id: int
    role: str
    text: str
    part: int = 1
    parts: int = 1

    def render(self) -> str:
        label = f"[message {self.message_id}, {self.role}"
        if self.parts > 1:
            label += f", part {self.part} of {self.parts}"
        return f"{label}] {self.text}"


@dataclass(frozen=True)
class Chunk:
    id: str
    index: int  # position in the whole ingest, 0-based: message order comes from chunk order
    conversation_id: str
    document: str
    session_number: int
    session_date: dt.date | None
    pieces: tuple[Piece, ...]
    tokens: int

    @property
    def message_ids(self) -> list[int]:
        seen: list[int] = []
        for piece in self.pieces:
            if not seen or seen[-1] != piece.message_id:
                seen.append(piece.message_id)
        return seen

    @property
    def date_text(self) -> str:
        return self.session_date.isoformat() if self.session_date else "undated"

    def text(self) -> str:
        """The chunk as the extraction prompt shows it: every message tagged with id and role."""
        return "\n".join(piece.render() for piece in self.pieces)


LABEL_ROOM = 16  # tokens a piece's "[message N, role, part i of k]" tag may take
MIN_FILL = 4  # a long message starts in the current chunk if at least 1/MIN_FILL of it is free


def _split(message, chunk_tokens: int, room: int) -> list[Piece]:
    """The pieces of a message longer than a chunk; the first fills `room` tokens if given."""
    first = room - LABEL_ROOM if room - LABEL_ROOM >= chunk_tokens // MIN_FILL else None
    parts = split_by_tokens(message.text, chunk_tokens - LABEL_ROOM, first)
    return [Piece(message.id, message.role, text, n, len(parts)) for n, text in enumerate(parts, start=1)]


def _chunk_id(conversation_id: str, session: int, pieces: list[Piece]) -> str:
    first, last = pieces[0], pieces[-1]
    return (f"{conversation_id}:s{session}:m{first.message_id}.{first.part}"
            f"-m{last.message_id}.{last.part}")


def document_order(documents: Iterable[Document]) -> list[Document]:
    """Documents in conversation order: by session, then by first message id."""
    return sorted(documents, key=lambda d: (d.session_number, d.messages[0].id if d.messages else -1, d.name))


def chunk_documents(documents: Iterable[Document], chunk_tokens: int = DEFAULT_CHUNK_TOKENS) -> list[Chunk]:
    if chunk_tokens < 32:
        raise ValueError(f"chunk_tokens={chunk_tokens} is too small; use at least 32")
    chunks: list[Chunk] = []
    for document in document_order(documents):
        _chunk_document(document, chunk_tokens, chunks)
    return chunks


def _chunk_document(document: Document, chunk_tokens: int, chunks: list[Chunk]) -> None:
    """Append ``document``'s chunks to ``chunks``: its messages packed whole in order, a message
    too long for one chunk split, its first piece in the room the current chunk has left."""
    current: list[Piece] = []
    size = 0

    def close() -> None:
        nonlocal current, size
        if current:
            chunks.append(Chunk(
                id=_chunk_id(document.conversation_id, document.session_number, current),
                index=len(chunks), conversation_id=document.conversation_id, document=document.name,
                session_number=document.session_number, session_date=document.session_date,
                pieces=tuple(current), tokens=size,
            ))
        current, size = [], 0

    def add(piece: Piece, piece_size: int) -> None:
        nonlocal size
        # +1 for the newline that joins rendered pieces
        if current and size + 1 + piece_size > chunk_tokens:
            close()
        size += piece_size + (1 if current else 0)
        current.append(piece)

    for message in document.messages:
        whole = Piece(message.id, message.role, message.text)
        whole_size = count_tokens(whole.render())
        if whole_size <= chunk_tokens:
            add(whole, whole_size)
            continue
        room = chunk_tokens - size - 1 if current else 0
        for piece in _split(message, chunk_tokens, room):
            add(piece, count_tokens(piece.render()))
    close()

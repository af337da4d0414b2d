"""Chunking and offline token counting (no Neo4j, no model)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from pytest_beam.data.records import Document, Message
from pytest_beam.memory.chunking import chunk_documents
from pytest_beam.memory.tokens import count_tokens, split_by_tokens

DATA = Path(os.environ.get("BEAM_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "beam"))


def doc(session: int, messages: list[tuple[int, str]], date: dt.date | None = dt.date(2024, 5, 1)) -> Document:
    return Document(conversation_id="9", name=f"session-{session}", session_number=session, session_date=date,
                    messages=tuple(Message(id=i, role="user" if i % 2 == 0 else "assistant", text=t)
                                   for i, t in messages))


def test_count_tokens_offline():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("word " * 100) == 101  # 100 words, the trailing space its own token


def test_split_by_tokens_rejoins_exactly_and_respects_limits():
    text = " ".join(f"word{i}" for i in range(900))
    pieces = split_by_tokens(text, 200, first_tokens=50)
    assert "".join(pieces) == text
    assert count_tokens(pieces[0]) <= 51
    assert all(count_tokens(p) <= 201 for p in pieces[1:])
    assert all(not p.startswith(" ") for p in pieces[1:])  # cut after whitespace, words whole


def test_messages_are_packed_whole_in_order():
    words = lambda n: " ".join(["alpha"] * n)  # noqa: E731
    d = doc(2, [(10, words(100)), (11, words(100)), (12, words(100)), (13, words(30))])
    chunks = chunk_documents([d], chunk_tokens=250)
    assert [c.message_ids for c in chunks] == [[10, 11], [12, 13]]
    assert all(c.tokens <= 250 for c in chunks)
    assert [c.index for c in chunks] == [0, 1]
    assert [c.id for c in chunks] == ["9:s2:m10.1-m11.1", "9:s2:m12.1-m13.1"]
    assert all(c.session_number == 2 and c.session_date == dt.date(2024, 5, 1) for c in chunks)
    assert chunk_documents([d], chunk_tokens=250) == chunks  # deterministic


def test_long_message_is_split_keeping_its_id():
    long_text = " ".join(f"token{i}" for i in range(1500))
    d = doc(1, [(0, "short question"), (1, long_text), (2, "thanks")])
    chunks = chunk_documents([d], chunk_tokens=400)
    pieces = [p for c in chunks for p in c.pieces if p.message_id == 1]
    assert len(pieces) > 2
    assert "".join(p.text for p in pieces) == long_text
    assert [p.part for p in pieces] == list(range(1, len(pieces) + 1))
    assert all(p.parts == len(pieces) for p in pieces)
    assert chunks[0].message_ids == [0, 1]  # the long message starts in the free room
    assert chunks[-1].message_ids == [1, 2]
    assert all(c.tokens <= 400 for c in chunks)
    assert "[message 1, assistant, part 1 of" in chunks[0].text()


def test_chunks_never_span_documents_and_follow_session_order():
    later = doc(3, [(20, "in session three")], date=dt.date(2024, 7, 10))
    earlier = doc(1, [(5, "in session one")], date=None)
    chunks = chunk_documents([later, earlier])
    assert [(c.session_number, c.message_ids, c.date_text) for c in chunks] == [
        (1, [5], "undated"), (3, [20], "2024-07-10")]


def test_each_chunk_carries_its_own_documents_name_session_and_date():
    """The packing helpers are made once per document (ruff's B023 asks whether they see a later
    document's values): every chunk, the last of each document included, names its own."""
    words = lambda n: " ".join(["beta"] * n)  # noqa: E731
    first = doc(1, [(0, words(100)), (1, words(100)), (2, words(100))], date=dt.date(2024, 1, 2))
    second = doc(2, [(3, words(100)), (4, words(100))], date=dt.date(2024, 2, 3))
    chunks = chunk_documents([second, first], chunk_tokens=250)
    assert [(c.document, c.session_number, c.session_date, c.message_ids, c.id) for c in chunks] == [
        ("session-1", 1, dt.date(2024, 1, 2), [0, 1], "9:s1:m0.1-m1.1"),
        ("session-1", 1, dt.date(2024, 1, 2), [2], "9:s1:m2.1-m2.1"),
        ("session-2", 2, dt.date(2024, 2, 3), [3, 4], "9:s2:m3.1-m4.1"),
    ]
    assert [c.index for c in chunks] == [0, 1, 2]


def test_lite_slices_chunk_with_ids_and_dates():
    if not (DATA / "chats").is_dir():
        pytest.skip(f"BEAM data not found at {DATA} (set BEAM_DATA)")
    from pytest_beam.data.sets import load_set

    documents = load_set("lite", DATA).documents["17"]
    chunks = chunk_documents(documents)
    assert [(c.id, c.session_number, c.session_date.isoformat(), c.message_ids) for c in chunks] == [
        ("17:s1:m18.1-m18.1", 1, "2024-03-15", [18]),
        ("17:s3:m156.1-m157.1", 3, "2024-07-10", [156, 157]),
        ("17:s3:m157.2-m157.2", 3, "2024-07-10", [157]),
    ]
    assert all(c.tokens <= 1000 for c in chunks)

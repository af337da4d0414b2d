"""The BEAM generator's plan markers, stripped before any memory system sees the chat.

BEAM's chats were generated from a plan, and the generator left its plan position at the end of
the turns it wrote: ``... can you help me? ->-> 1,4`` (plan batch, then item). They are not part
of the conversation; they leak the chat's structure (and which turns a question was built from)
to a system that indexes them, so other harnesses strip them before ingest and so do we by
default (``--beam-keep-markers`` keeps the raw text).

Survey of the 100K split (all 20 conversations, 2,199 markers; 2,155 in user turns, 44 in
conversation 5's assistant turns), every marker at the very end of its message after one space:

======================  =====  =================================
shape                   count  example
======================  =====  =================================
``->-> N,N``            2,190  conv 1, message 0: ``->-> 1,1``
``->-> N,N)``               6  conv 7, message 236: ``->-> 5,14)``
``->-> N,N/A``              1  conv 1, message 108: ``->-> 2,N/A``
``->->  N,N`` (2 spaces)    1  conv 5, message 153: ``->->  3,8``
``->-> N,N, N``             1  conv 19, message 122: ``->-> 2,22, 24``
======================  =====  =================================

The larger tiers (``pytest_beam/data/survey.py``; 500K: all 35 chats, 14,589 markers, all in user
turns; 1M: the 9 chats here, 6,257) add the generator's commentary after the marker, stripped with
it since it is the generator's, not the user's:

=============================  ======  =====  =========================================================
shape                          500K    1M     example
=============================  ======  =====  =========================================================
``->-> N,N``                   14,412  6,187
``->-> N,N/A``                 153     51
``->-> N,`` (no item)          --      18     1M conv 6, message 766: ``->-> 5,``
``->-> N,(note)``              9       --     500K conv 16, message 680: ``->-> 7,(N/A, but related ...)``
``->-> N,N)``                  6       --
``->-> N,N) <plan label>``     4       --     500K conv 19, message 964: ``->-> 9,5) Decision & Change Labels:...``
``->-> N,N, N``                3       --
``->-> N,<plan label>``        1       --     500K conv 24, message 708: ``->-> 7,Goals & Progress Labels:...``
``->-> N,(note) text``         1       --     500K conv 31, message 342: the note, then the generator's
                                              rewrite of the question, which is kept
in an assistant reply          --      1      1M conv 4, message 1009: a leaked user turn, repaired
                                              (``repairs.py``, kind ``leaked_turn``) before stripping
=============================  ======  =====  =========================================================

The generator's end-of-text token ``[END_OF_TEXT]`` ends four cut-off assistant replies (500K conv 7
messages 1059 and 1061, conv 28 message 521; 1M conv 7 message 1635): stripped the same way.

A ``->->`` in any other shape or place is not guessed at: stripping raises, naming the text, so
a new data revision's new shape is seen rather than half-stripped.
"""

from __future__ import annotations

import re

from .data_error import BeamDataError
from .records import Document, Message

ARROW = "->->"
_ITEMS = r"(?:\d+|N/A)(?:\s*,\s*\d+)*\s*\)?"  # 1,4 / 2,N/A / 2,22, 24 / 5,14)
_LABEL = r"[A-Z][^\n:]*? Labels:[^\n]*"  # a plan label line: Decision & Change Labels:Career Transition: ...
_NOTE = r"\([^()\n]*\)"  # the generator's note on its own marker: (N/A, but related to ...)
# whitespace, the arrow, batch number, comma, then the item (numbers or N/A, with an optional stray
# ")" and a leaked plan label after it), or a note, or a label, or nothing; trailing whitespace;
# anchored at the end of the text (\Z, not $: no newline slips by)
PLAN_MARKER = re.compile(rf"\s*->->\s*\d+\s*,\s*(?:{_ITEMS}(?:\s*{_LABEL})?|{_NOTE}|{_LABEL}|)\s*\Z")
# the one shape not at the end: a marker and its note, then the generator's rewrite of the question
NOTE_BEFORE_TEXT = re.compile(rf"\s*->->\s*\d+\s*,\s*{_NOTE}(?=\s*\S)")


# the generator's end-of-text token, left at the end of four cut-off assistant replies (500K and 1M)
END_TOKEN = "[END_OF_TEXT]"


def strip_plan_marker(text: str) -> str:
    """``text`` without its plan marker (or trailing end-of-text token); unchanged when it has none.

    Raises ``ValueError`` when a ``->->`` is left over (an unknown shape, or not at the end).
    """
    if text.endswith(END_TOKEN):
        text = text[: -len(END_TOKEN)].rstrip()
    stripped = NOTE_BEFORE_TEXT.sub("", text, count=1) if ARROW in text else text
    stripped = PLAN_MARKER.sub("", stripped, count=1)
    at = stripped.find(ARROW)
    if at >= 0:
        raise ValueError(f"a plan marker of an unknown shape: {stripped[max(0, at - 40):at + 40]!r}")
    return stripped


def marker_shape(text: str) -> str | None:
    """The shape of ``text``'s plan marker, numbers as N and notes and labels named (the survey's
    rows), e.g. ``->-> N,N`` or ``->-> N,(note) text``; None without a marker."""
    if text.endswith(END_TOKEN):
        return END_TOKEN
    if ARROW not in text:
        return None
    if NOTE_BEFORE_TEXT.search(text) and not PLAN_MARKER.search(text):
        return "->-> N,(note) text"
    found = PLAN_MARKER.search(text)
    if found is None:
        return "unknown"
    shape = re.sub(_NOTE, "(note)", found.group(0).strip())
    shape = re.sub(_LABEL, "<label>", shape)
    return re.sub(r"\d+", "N", shape)


def strip_message(message: Message, conversation_id: str) -> Message:
    try:
        text = strip_plan_marker(message.text)
    except ValueError as exc:
        raise BeamDataError(f"conversation {conversation_id}, message {message.id}: {exc}") from exc
    return message if text == message.text else message.model_copy(update={"text": text})


def strip_document(document: Document) -> Document:
    """The document with every message's plan marker stripped (what a memory system ingests)."""
    messages = tuple(strip_message(m, document.conversation_id) for m in document.messages)
    return document.model_copy(update={"messages": messages})

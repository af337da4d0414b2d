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

A ``->->`` in any other shape or place is not guessed at: stripping raises, naming the text, so
a new data revision's new shape is seen rather than half-stripped.
"""

from __future__ import annotations

import re

from .errors import BeamDataError
from .records import Document, Message

ARROW = "->->"
# whitespace, the arrow, batch number, comma, item number or N/A, more item numbers, an optional
# stray ")", trailing whitespace; anchored at the end of the text (\Z, not $: no newline slips by)
PLAN_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*(?:\d+|N/A)(?:\s*,\s*\d+)*\s*\)?\s*\Z")


def strip_plan_marker(text: str) -> str:
    """``text`` without its trailing plan marker; unchanged when it has none.

    Raises ``ValueError`` when a ``->->`` is left over (an unknown shape, or not at the end).
    """
    stripped = PLAN_MARKER.sub("", text, count=1)
    at = stripped.find(ARROW)
    if at >= 0:
        raise ValueError(f"a plan marker of an unknown shape: {stripped[max(0, at - 40):at + 40]!r}")
    return stripped


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

"""What a search query asks for, read from its words alone (no model call).

Two kinds of question need evidence that a plain top-k ranking does not put first:

* ``ordering``: "the order in which I brought up ...". The evidence is one user turn per topic,
  spread over the sessions; assistant replies crowd it out of the top of the ranking.
* ``summary``: "a summary of how my ... progressed". The evidence is user turns *with the
  assistant replies that answered them*, which the user-turn prior of search.py pushes down.

Everything else is ``plain``. :func:`topic_words` drops the words that say how to answer ("Can
you list the order in which I brought up", "throughout our conversations", "Mention ONLY and ONLY
five items") and keeps the topic, which is what the chat's messages share with the question.
Chosen on the full set's five conversations only (bench/retrieval.py, README "Retrieval").
"""

from __future__ import annotations

import re
from typing import Literal

QuestionIntent = Literal["ordering", "summary", "plain"]

_ORDERING = re.compile(
    r"\b(order in which|in (chronological )?order|chronological(ly)?|in what order|what order|"
    r"sequence of|from earliest to latest|earliest to latest)\b", re.IGNORECASE)
_SUMMARY = re.compile(r"\b(summary|summari[sz]e|summari[sz]ing|recap|overview)\b", re.IGNORECASE)

# How the answer should be given, and where in the chat to look: not the topic.
_FRAMING = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bmention only and only \w+ items?\b\.?",
    r"\b(can|could|would) you (please )?(list|walk me through|give me|provide|tell me|summari[sz]e|show me)\b",
    r"\bthe order in which (i|we) (brought up|mentioned|discussed|talked about|raised)\b",
    r"\bin (chronological )?order\b",
    r"\b(throughout|across|over|in|from|based on) (all )?(of )?(our|my|the) (recent )?"
    r"(conversations|discussions|chats|sessions|requests|talks|exchanges)\b",
    r"\ba (comprehensive|clear|brief|detailed|short|quick)? ?(summary|recap|overview) of\b",
    r"\bdifferent (aspects|concepts|parts|topics) (of|related to)\b",
))


def question_intent(text: str) -> QuestionIntent:
    """``ordering``, ``summary`` or ``plain`` (ordering wins when a question says both)."""
    if _ORDERING.search(text):
        return "ordering"
    if _SUMMARY.search(text):
        return "summary"
    return "plain"


def topic_words(text: str) -> str:
    """The question without its answer framing; the question itself when nothing is left."""
    out = text
    for pattern in _FRAMING:
        out = pattern.sub(" ", out)
    out = re.sub(r"\s+", " ", out).strip(" ,;:?.!")
    return out if re.search(r"\w", out) else text

"""The ids of BEAM questions and of the items that run them: one typed parse/format pair.

Every place that builds or reads an id goes through this module, so the id's shape lives in one
regex. A question id names the conversation, the ability and the 0-based position
(``conv17:information_extraction:0``); on every tier but 100K it starts with the tier and a slash
(``500K/conv3:information_extraction:0``), so the records, snapshots, caches and xdist groups of two
tiers never collide, while 100K's ids stay as they always were (snapshots, cassettes and ``-k``
expressions written before the larger tiers keep working). An item id puts the memory system's
name and a dash before the question id when systems are compared (``bm25-500K/conv3:...``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TIERS: tuple[str, ...] = ("100K", "500K", "1M", "10M")
DEFAULT_TIER = "100K"

_QUESTION = (r"(?:(?P<tier>" + "|".join(t for t in TIERS if t != DEFAULT_TIER) + r")/)?"
             r"conv(?P<conversation>[1-9]\d*):(?P<ability>[a-z_]+):(?P<index>\d+)")
_QUESTION_ID = re.compile(rf"^{_QUESTION}$")
#: How every node id of the suite's items starts (``session/question_items.py`` adds the module ``beam``,
#: ``session/suite.py`` holds ``test_question``; tests/data/test_ids.py checks the two agree).
SUITE_ITEM_PREFIX = "beam::test_question["
# the system's name may hold dashes (long-context): the shortest prefix that leaves a question id
_ITEM_ID = re.compile(rf"^(?:(?P<system>.+?)-)?{_QUESTION}$")


@dataclass(frozen=True)
class QuestionId:
    """One probing question of one tier."""

    conversation: str
    ability: str
    index: int
    tier: str = DEFAULT_TIER

    def __post_init__(self) -> None:
        if self.tier not in TIERS:
            raise ValueError(f"unknown BEAM tier {self.tier!r}: one of {', '.join(TIERS)}")

    def __str__(self) -> str:
        return format_question_id(self)

    @property
    def conversation_label(self) -> str:
        return conversation_label(self.tier, self.conversation)

    @property
    def filename(self) -> str:
        """The id with no ':' or '/' (a snapshot's file name): ``500K__conv3__summarization__0``."""
        return str(self).replace("/", "__").replace(":", "__")


@dataclass(frozen=True)
class ItemId:
    """One pytest item of the suite: a question, and the system answering it when systems are compared."""

    question: QuestionId
    system: str | None = None

    def __str__(self) -> str:
        return format_item_id(self.question, self.system)


def conversation_label(tier: str, conversation: str) -> str:
    """``conv3`` on 100K, ``500K/conv3`` on the other tiers: a conversation across tiers (xdist groups,
    bootstrap clusters, the dry run's table)."""
    return f"conv{conversation}" if tier == DEFAULT_TIER else f"{tier}/conv{conversation}"


def format_question_id(question: QuestionId) -> str:
    return f"{conversation_label(question.tier, question.conversation)}:{question.ability}:{question.index}"


def parse_question_id(text: str) -> QuestionId | None:
    """``"500K/conv3:summarization:1"`` -> its parts; None for anything else (``100K/`` is never written)."""
    found = _QUESTION_ID.match(text)
    return _question(found) if found else None


def format_item_id(question: QuestionId, system: str | None = None) -> str:
    return str(question) if system is None else f"{system}-{question}"


def parse_item_id(text: str) -> ItemId | None:
    """``"bm25-500K/conv3:summarization:1"`` -> (system bm25, the question); a bare question id has no
    system; None when ``text`` is no item id of the suite."""
    found = _ITEM_ID.match(text)
    return ItemId(_question(found), found.group("system")) if found else None


def item_id_of_nodeid(nodeid: str) -> ItemId | None:
    """The item id inside a suite item's node id (``beam::test_question[<item id>]``, with xdist's
    ``@group`` after it or not), else None: a test of the user's own whose parameter looks like a
    question id is not one of the suite's items."""
    if not nodeid.startswith(SUITE_ITEM_PREFIX) or "]" not in nodeid:
        return None
    return parse_item_id(nodeid[len(SUITE_ITEM_PREFIX):nodeid.rindex("]")])


def require_question_id(text: str) -> QuestionId:
    """As :func:`parse_question_id`, raising ValueError that shows the expected shape."""
    question = parse_question_id(text)
    if question is None:
        raise ValueError(f"{text!r} is not a BEAM question id like conv17:temporal_reasoning:1 "
                         f"or 500K/conv3:temporal_reasoning:1")
    return question


def _question(found: re.Match[str]) -> QuestionId:
    return QuestionId(conversation=found.group("conversation"), ability=found.group("ability"),
                      index=int(found.group("index")), tier=found.group("tier") or DEFAULT_TIER)

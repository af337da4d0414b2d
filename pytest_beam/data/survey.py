"""The survey of BEAM's known defects on every tier a copy holds: what ``bench/data_defects.py``
prints and what the tests hold the repairs, markers and flags to.

Three kinds, as 100K's were surveyed: runaway messages (``defects.py``; each one repaired under a
pinned hash, ``repairs.tsv``), the generator's plan markers by shape (``markers.py``), and rubric
checks that a program can make (a question that asks for N items against a rubric of another
count; a duration in a temporal rubric that no two of its own dates give; source ids outside the
chat). A check's hit is a candidate: each was read against the chat before it became a
``known_bad_rubric`` flag (``fixtures/known_bad_rubric.json`` keeps the reason).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import pins
from .defects import runaway
from .ids import QuestionId
from .local_copy import chat_present, read_chat
from .markers import marker_shape
from .records import ABILITIES
from .sources import RawItem
from .tiers import tier as tier_of


@dataclass(frozen=True)
class RunawayRow:
    tier: str
    conversation: str
    message: int
    role: str
    kind: str
    characters: int  # of the original message
    runaway_characters: int
    repeats: int
    sha256: str


@dataclass
class MarkerSurvey:
    tier: str
    shapes: Counter[str] = field(default_factory=Counter)
    examples: dict[str, tuple[str, int]] = field(default_factory=dict)
    by_role: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class RubricFinding:
    check: str
    question_id: str
    detail: str


def raw_messages(root: Path, tier: str) -> Iterator[tuple[str, RawItem]]:
    """(conversation, raw message) of every chat of ``tier`` the copy holds, files hash-checked."""
    for cid in tier_of(tier).conversations:
        if chat_present(root, tier, cid):
            sessions, _ = read_chat(root, tier, cid, pins.UPSTREAM_FILES)
            for session in sessions:
                for message in session:
                    yield cid, message


def runaways(root: Path, tier: str) -> list[RunawayRow]:
    rows = []
    for cid, m in raw_messages(root, tier):
        found = runaway(m["content"])
        if found is not None:
            rows.append(RunawayRow(tier, cid, int(m["id"]), m["role"], found.kind, len(m["content"]), found.length,
                                   found.repeats, hashlib.sha256(m["content"].encode("utf-8")).hexdigest()))
    return rows


def markers(root: Path, tier: str) -> MarkerSurvey:
    survey = MarkerSurvey(tier)
    for cid, m in raw_messages(root, tier):
        shape = marker_shape(m["content"])
        if shape is not None:
            survey.shapes[shape] += 1
            survey.examples.setdefault(shape, (cid, int(m["id"])))
            survey.by_role[m["role"]] += 1
    return survey


# ------------------------------------------------------------------ rubric checks

_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_ASKED_COUNT = re.compile(r"\b(two|three|four|five|six|seven|eight|nine|ten|\d+)\b (?:\w+ ){0,3}?(?:items|events|"
                          r"steps|stages|milestones|aspects|topics|points|phases|things|ways|changes|updates|"
                          r"decisions|parts|areas|elements)\b", re.I)
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_DATE = re.compile(r"\b(" + "|".join(m.capitalize() for m in _MONTHS)
                   + r")\.? (\d{1,2})(?:st|nd|rd|th)?(?:,? (\d{4}))?")
_DURATION = re.compile(r"\b(\d+)\s*(days?|weeks?)\b", re.I)


def _dates(text: str) -> list[dt.date]:
    found = []
    for month, day, year in _DATE.findall(text):
        try:
            found.append(dt.date(int(year or 2024), _MONTHS.index(month.lower()) + 1, int(day)))
        except ValueError:
            continue
    return found


def _flat_ids(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [i for inner in value.values() for i in _flat_ids(inner)]
    if isinstance(value, (list, tuple)):
        return [i for inner in value for i in _flat_ids(inner)]
    return [] if value is None else [int(value)]


def rubric_findings(root: Path, tier: str) -> list[RubricFinding]:
    """Every hit of the mechanical rubric checks on the tier's questions the copy holds."""
    findings = []
    spec = tier_of(tier)
    for cid in spec.conversations:
        path = root / spec.questions_path(cid)
        if not path.is_file():
            continue
        probing = json.loads(path.read_text(encoding="utf-8"))
        messages = None
        if chat_present(root, tier, cid):
            messages = sum(len(s) for s in read_chat(root, tier, cid, pins.UPSTREAM_FILES)[0])
        for ability in ABILITIES:
            for index, q in enumerate(probing.get(ability, [])):
                qid = str(QuestionId(cid, ability, index, tier))
                findings += _check(qid, ability, q, messages)
    return findings


def _check(qid: str, ability: str, q: RawItem, messages: int | None) -> list[RubricFinding]:
    out = []
    rubric = [str(r) for r in q.get("rubric") or []]
    asked = _ASKED_COUNT.search(str(q.get("question", "")))
    if asked:
        word = asked.group(1).lower()
        count = _NUMBER_WORDS.get(word) or (int(word) if word.isdigit() else None)
        if count and count != len(rubric) and ability == "event_ordering":
            out.append(RubricFinding("asked_count", qid, f"the question asks for {asked.group(0)!r}; the rubric "
                                                        f"lists {len(rubric)}"))
    if ability == "temporal_reasoning":
        out += _durations(qid, rubric, q)
    ids = _flat_ids(q.get("source_chat_ids"))
    if messages is not None and any(not 0 <= i < messages for i in ids):
        out.append(RubricFinding("source_ids", qid, f"source ids {sorted(i for i in ids if not 0 <= i < messages)} "
                                                    f"are outside the chat's {messages} messages"))
    return out


_COMPOUND = re.compile(r"\b(\d+)\s*(weeks?|months?)\s*(?:and|,)\s*(\d+)\s*days?\b", re.I)
_REFERENCE_KEYS = ("answer", "ideal_answer", "ideal_response")


def _durations(qid: str, rubric: list[str], q: RawItem) -> list[RubricFinding]:
    """A duration the rubric states that no two dates of the rubric or its reference answer give
    (within a day; a stated number of weeks within half a week; a year may turn between the dates)."""
    reference = next((str(q[k]) for k in _REFERENCE_KEYS if k in q), "")
    dates = _dates(" ".join(rubric) + " " + reference)
    gaps = {abs((a - b).days) for a in dates for b in dates} - {0}
    gaps |= {365 - g for g in gaps if g > 300}  # December to January, years unwritten
    text = " ".join(rubric)
    stated = [int(w) * (30 if u.lower().startswith("month") else 7) + int(d) for w, u, d in _COMPOUND.findall(text)]
    stated += [int(v) * (7 if u.lower().startswith("week") else 1)
               for v, u in _DURATION.findall(_COMPOUND.sub("", text))]
    misses = [days for days in stated if gaps and not any(abs(days - g) <= 3 if days % 7 == 0 else abs(days - g) <= 1
                                                          for g in gaps)]
    return [RubricFinding("duration", qid, f"the rubric states {days} days; the dates of the rubric and its "
                                           f"reference answer are {', '.join(str(g) for g in sorted(gaps))} days apart")
            for days in misses]


# Hits of the checks above that were read against the chat (or, where the copy lacks it, the
# question's own data) and hold: each one's reason. Every other hit is a known_bad_rubric flag.
REVIEWED_AND_SOUND: dict[str, str] = {
    "500K/conv18:temporal_reasoning:0": "34 days = no contact from the last message on March 1 (message 44) through "
                                        "the 30-day plan begun March 5 (message 26), i.e. to April 4.",
    "500K/conv32:temporal_reasoning:1": "0 days left: May 1, 2024 (message 64) plus 6 weeks is June 12, the MVP "
                                        "deadline (message 156).",
    "500K/conv33:temporal_reasoning:1": "3 weeks of practice (message 96), and April 5 to June 30 (messages 96, 26) is "
                                        "86 days, about 12 weeks.",
    "1M/conv27:temporal_reasoning:1": "April 20 to October 10 is 5 months and 20 days, as the rubric says (the check "
                                      "counts a month as 30 days).",
}

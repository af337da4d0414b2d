"""BEAM's four tiers: their conversations, the full set each one runs, and where their files live.

The full set of every tier is five conversations (100 questions, ten per ability), one per topic
category where the tier offers five: 100K's own choice took one conversation of each of five
categories (Coding 1, Math 4, Writing 6, Recommendation 13, Lifestyle 17), and its conversation 4
carries the data's best-known defect, so a full run exercises the repair. The larger tiers are
chosen the same way (categories from the upstream repository's ``topic.json`` files):

- 500K: Coding, Math and Asking Recommendation (the categories it shares with 100K's full set),
  then Career and Home & Real Estate; in each, the conversation whose defects cost most to leave in
  (the most characters of runaway generation loops the repairs cut, or the plan-label leaks in the
  markers), else the lowest-numbered: 2 (Coding, a loop of invented JWT error classes), 9 (Math,
  five loops, 170k characters), 11 (Recommendation, none), 19 (Career, plan labels leaked after
  the markers), 28 (Home, three runaway ASCII tables, 469k characters).
- 1M: only nine chats (3, 4, 6-10, 31, 32) are in the offline copy CI holds, three categories, and
  the full set must run there: two of Coding (3: a runaway config loop; 4: an assistant turn
  holding a leaked user turn and its marker), two of Math (8: five loops; 9: a run of 11,182 zeros
  and two loops) and one of Trip Planning (31: plan markers with an empty item).
- 10M: no data here to survey, so the rule alone: the lowest-numbered conversation of each of the
  first five categories in upstream order (Coding 1, Math 4, Education 6, Career 7, Trip 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .ids import DEFAULT_TIER, TIERS

UPSTREAM_URL = "https://github.com/mohammadtavakoli78/BEAM"


@dataclass(frozen=True)
class Tier:
    name: str
    conversations: tuple[str, ...]
    full: tuple[str, ...]
    layout: Literal["chat", "plans"]  # one chat.json per conversation, or 10M's plan-<k>/chat.json folders

    def chat_path(self, conversation: str) -> str:
        """The conversation's chat as BEAM's own code reads it (10M: the plans joined, see plans_10m.py)."""
        return f"chats/{self.name}/{conversation}/chat.json"

    def questions_path(self, conversation: str) -> str:
        return f"chats/{self.name}/{conversation}/probing_questions/probing_questions.json"

    def plan_path(self, conversation: str, plan: int) -> str:
        return f"chats/{self.name}/{conversation}/plan-{plan}/chat.json"


def _numbers(last: int) -> tuple[str, ...]:
    return tuple(str(n) for n in range(1, last + 1))


TIER_TABLE: dict[str, Tier] = {
    "100K": Tier("100K", _numbers(20), ("1", "4", "6", "13", "17"), "chat"),
    "500K": Tier("500K", _numbers(35), ("2", "9", "11", "19", "28"), "chat"),
    "1M": Tier("1M", _numbers(35), ("3", "4", "8", "9", "31"), "chat"),
    "10M": Tier("10M", _numbers(10), ("1", "4", "6", "7", "8"), "plans"),
}
assert tuple(TIER_TABLE) == TIERS


def tier(name: str | None) -> Tier:
    from .data_error import BeamDataError

    found = TIER_TABLE.get(name or DEFAULT_TIER)
    if found is None:
        raise BeamDataError(f"unknown BEAM tier {name!r}: choose one of {', '.join(TIERS)}")
    return found


def ranges(numbers: list[str] | tuple[str, ...]) -> str:
    """``["1", "2", "5", "11", "12", "13"]`` -> ``"1, 2, 5, 11-13"``: a long list of conversations, short."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive numbers
    for value in sorted(int(n) for n in numbers):
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    return ", ".join(str(start) if start == end else f"{start}-{end}" if end - start > 1 else f"{start}, {end}"
                     for start, end in runs)

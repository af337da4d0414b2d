"""Known defects of the BEAM data, repaired only when the original is exactly the known one.

Every repaired message is a row of ``repairs.tsv``: tier, conversation, message, the kind of repair,
the sha256 of the original content and the characters the repair removes. A message whose hash
differs is not repaired but stops the run (changed data is not guessed at), and a repair that
would remove another count than its pin is a bug, so it stops the run too. The kinds:

- ``runaway_spaces`` (100K conversation 4, message 97): cut after the last real text, at the first
  run of 200+ spaces; 345k spaces of ASCII-art indentation follow it.
- ``generation_loop``: cut where the loop begins (``defects.loop_tail``), keeping the first pass
  of the repeated lines; what follows only repeats them until the generator's token limit.
- ``character_run``: each run of 200+ of one character keeps its first 20 and says how many more
  were cut; the text around it stays.
- ``leaked_turn`` (1M conversation 4, message 1009): the generator wrote the user's next turn into
  the assistant's reply, with its plan marker and its own prompt (``->-> 7,9Please respond only in
  English.`` and ``Assistant``); those generator words are removed, the rest kept.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .data_error import BeamDataError
from .defects import CHARACTER_RUN, loop_tail

REPAIRS_FILE = "repairs.tsv"
CONV4_MESSAGE_97_SHA256 = "f395a89214d8b2b6f226e6ae3f0e4f3727222d55223fef10ea76405af865ed73"
_RUNAWAY_SPACES = re.compile(r" {200,}")
CUT_MARKER = "\n\n[pytest-beam: the rest of this message was cut: {removed:,} characters of runaway indentation]"
LOOP_MARKER = ("\n\n[pytest-beam: the rest of this message was cut: {removed:,} characters of a generation loop "
               "repeating the lines above]")
RUN_KEPT = 20
RUN_MARKER = " [pytest-beam: {removed:,} more {char!r} characters cut] "
_RUN = re.compile(r"(.)\1{%d,}" % (CHARACTER_RUN - 1), re.S)
LEAKED_TURN = " ->-> 7,9Please respond only in English.\nAssistant\n"
KINDS = ("runaway_spaces", "generation_loop", "character_run", "leaked_turn")


@dataclass(frozen=True)
class Repair:
    tier: str
    conversation: str
    message: int
    kind: str
    sha256: str  # of the original content
    removed: int  # characters the repair removes (the marker it adds not counted)


@lru_cache(maxsize=1)
def repairs() -> dict[tuple[str, str, int], Repair]:
    """Every pinned repair, by (tier, conversation, message id)."""
    table = resources.files(__package__).joinpath(REPAIRS_FILE).read_text(encoding="utf-8")
    rows = [line.split("\t") for line in table.splitlines() if line and not line.startswith("#")]
    if not rows or rows[0] != ["tier", "conversation", "message", "kind", "sha256", "removed"]:
        raise RuntimeError(f"{REPAIRS_FILE}: unexpected header {rows[:1]}")
    found = {}
    for tier, conversation, message, kind, digest, removed in rows[1:]:
        if kind not in KINDS:
            raise RuntimeError(f"{REPAIRS_FILE}: unknown kind {kind!r}")
        found[(tier, conversation, int(message))] = Repair(tier, conversation, int(message), kind, digest, int(removed))
    return found


def repair_message(conversation_id: str, message_id: int, content: str, tier: str = "100K") -> str:
    repair = repairs().get((tier, conversation_id, message_id))
    return content if repair is None else apply_repair(repair, content)


def apply_repair(repair: Repair, content: str) -> str:
    where = f"{repair.tier} conversation {repair.conversation}, message {repair.message}"
    actual = hashlib.sha256(content.encode("utf-8")).hexdigest()
    if actual != repair.sha256:
        raise BeamDataError(
            f"{where}: content sha256 is {actual}, expected {repair.sha256} (pytest_beam/data/{REPAIRS_FILE}); "
            "the known defect cannot be repaired safely on changed data."
        )
    repaired, removed = _REPAIR[repair.kind](content)
    if removed != repair.removed:
        raise BeamDataError(f"{where}: the {repair.kind} repair would remove {removed:,} characters, "
                            f"not the {repair.removed:,} pinned in pytest_beam/data/{REPAIRS_FILE}")
    return repaired


def repair_conv4_message_97(content: str) -> str:
    """Cut the 345k spaces of runaway ASCII-art indentation after the last real text."""
    return apply_repair(repairs()[("100K", "4", 97)], content)


def _runaway_spaces(content: str) -> tuple[str, int]:
    match = _RUNAWAY_SPACES.search(content)
    if match is None:  # the pinned hash guarantees the run exists
        raise BeamDataError("no run of 200+ spaces found")
    kept = content[: match.start()].rstrip()
    return kept + CUT_MARKER.format(removed=len(content) - len(kept)), len(content) - len(kept)


def _generation_loop(content: str) -> tuple[str, int]:
    tail = loop_tail(content)
    if tail is None:
        raise BeamDataError("no generation loop found")
    kept = content[: tail[0]].rstrip()
    removed = len(content) - len(kept)
    return kept + LOOP_MARKER.format(removed=removed), removed


def _character_run(content: str) -> tuple[str, int]:
    removed = 0

    def cut(match: re.Match[str]) -> str:
        nonlocal removed
        extra = len(match.group(0)) - RUN_KEPT
        removed += extra
        return match.group(0)[:RUN_KEPT] + RUN_MARKER.format(removed=extra, char=match.group(1))

    return _RUN.sub(cut, content), removed


def _leaked_turn(content: str) -> tuple[str, int]:
    if content.count(LEAKED_TURN) != 1:
        raise BeamDataError("the leaked turn's generator words are not there once")
    return content.replace(LEAKED_TURN, "\n"), len(LEAKED_TURN) - 1


_REPAIR = {"runaway_spaces": _runaway_spaces, "generation_loop": _generation_loop,
           "character_run": _character_run, "leaked_turn": _leaked_turn}

"""Standing rules in the chat's own words, found at ingest with no model call.

A user who sets a standing instruction says so in a recognisable form ("Always format dates in
MM/DD/YYYY when I ask about scheduling details"; "Never ..."; "From now on ..."), and a stated
preference carries its trigger words ("I prefer e-books for their portability"). Ingest stores the
cue on the Message node (``m.cue``: ``instruction``, ``preference`` or null), so search can put
the standing instruction that matches a question beside its hits: a question that falls under a
rule rarely shares its words (bench/retrieval.py measured the instruction-following questions at
0.42 recall@10 on the dev conversations before, 0.53 with it).

Only user turns carry cues: an assistant saying "always" sets no rule for itself.
"""

from __future__ import annotations

import re
from typing import Literal

Cue = Literal["instruction", "preference"]
CUES: tuple[str, ...] = ("instruction", "preference")

_INSTRUCTION = re.compile(
    r"^\W*(please\s+)?(always|never|from now on|going forward|make sure (to|you)|remember to|"
    r"don't ever|do not ever)\b", re.IGNORECASE)
_PREFERENCE = re.compile(
    r"\b(i prefer|i'd prefer|i would prefer|i preferred|my preference|my preferences|i'd rather|"
    r"i would rather|i really like|i love|i don't like|i do not like|i dislike|i hate|i enjoy|"
    r"i'm a fan of|i am a fan of)\b", re.IGNORECASE)


def message_cue(text: str, role: str) -> Cue | None:
    """``instruction`` for a user turn that opens with a standing rule, ``preference`` for one that
    states a preference, else None."""
    if role != "user" or not text:
        return None
    if _INSTRUCTION.search(text):
        return "instruction"
    if _PREFERENCE.search(text):
        return "preference"
    return None

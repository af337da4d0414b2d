"""Known defects of the BEAM data, repaired only when the original is exactly the known one."""

from __future__ import annotations

import hashlib
import re

from .errors import BeamDataError

CONV4_MESSAGE_97_SHA256 = "f395a89214d8b2b6f226e6ae3f0e4f3727222d55223fef10ea76405af865ed73"
_RUNAWAY_SPACES = re.compile(r" {200,}")
CUT_MARKER = "\n\n[pytest-beam: the rest of this message was cut: {removed:,} characters of runaway indentation]"


def repair_message(conversation_id: str, message_id: int, content: str) -> str:
    if (conversation_id, message_id) == ("4", 97):
        return repair_conv4_message_97(content)
    return content


def repair_conv4_message_97(content: str) -> str:
    """Cut the 345k spaces of runaway ASCII-art indentation after the last real text."""
    actual = hashlib.sha256(content.encode("utf-8")).hexdigest()
    if actual != CONV4_MESSAGE_97_SHA256:
        raise BeamDataError(
            f"conversation 4, message 97: content sha256 is {actual}, expected "
            f"{CONV4_MESSAGE_97_SHA256}; the known defect cannot be repaired safely on changed data."
        )
    match = _RUNAWAY_SPACES.search(content)
    if match is None:  # the pinned hash guarantees the run exists
        raise BeamDataError("conversation 4, message 97: no run of 200+ spaces found")
    kept = content[: match.start()].rstrip()
    return kept + CUT_MARKER.format(removed=len(content) - len(kept))

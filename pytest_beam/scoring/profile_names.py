"""The scoring profiles by name: the one table every list of profile names comes from.

A leaf (no imports of ours), so the settings table can offer the choices and describe them without
loading the scorer; ``profiles.get_profile`` makes a name's profile from its row. A new profile is
a module with its class, its name in ``ProfileName`` and one row here (a test keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

ProfileName = Literal["default", "upstream", "omnimemeval"]


@dataclass(frozen=True)
class ProfileEntry:
    """Where a profile's class lives, and what it is in a few words (``--beam-scorer``'s help)."""

    module: str
    cls: str
    what: str


PROFILE_TABLE: dict[ProfileName, ProfileEntry] = {
    "default": ProfileEntry("pytest_beam.scoring.beam_profiles", "DefaultProfile", "fixed"),
    "upstream": ProfileEntry("pytest_beam.scoring.beam_profiles", "UpstreamProfile",
                             "BEAM code's quirks, for BEAM's published numbers"),
    "omnimemeval": ProfileEntry("pytest_beam.scoring.omnimemeval", "OmniMemEvalProfile",
                                "0.5 kept, question filled in, event ordering as tau-b x coverage, as OmniMemEval "
                                "scores"),
}
PROFILE_NAMES: tuple[ProfileName, ...] = get_args(ProfileName)
DEFAULT_PROFILE: ProfileName = "default"


def names_text() -> str:
    """The names, as a help text lists them: "default, upstream or omnimemeval"."""
    return ", ".join(PROFILE_NAMES[:-1]) + f" or {PROFILE_NAMES[-1]}"


def choices_text() -> str:
    """The names with what each is, as ``--beam-scorer``'s help lists them."""
    described = [f"{name} ({PROFILE_TABLE[name].what})" for name in PROFILE_NAMES]
    return ", ".join(described[:-1]) + f" or {described[-1]}"


__all__ = ["DEFAULT_PROFILE", "PROFILE_NAMES", "PROFILE_TABLE", "ProfileEntry", "ProfileName", "choices_text",
           "names_text"]

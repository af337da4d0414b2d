"""The scoring profiles' names: the one list every choice of ``--beam-scorer`` comes from.

A leaf (no imports of ours), so the settings table can offer the choices without loading the
scorer; ``profiles.PROFILES`` holds one object per name here, and a test keeps the two equal.
"""

from __future__ import annotations

from typing import Literal, get_args

ProfileName = Literal["default", "upstream", "omnimemeval"]
PROFILE_NAMES: tuple[ProfileName, ...] = get_args(ProfileName)
DEFAULT_PROFILE: ProfileName = "default"

__all__ = ["DEFAULT_PROFILE", "PROFILE_NAMES", "ProfileName"]

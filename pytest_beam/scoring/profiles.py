"""The scoring profiles by name: which published table a run's numbers can stand beside.

``get_profile`` makes the profile of a name from its row of ``profile_names.PROFILE_TABLE`` (one
object per name, made on first use); every other list of profile names -- the ``--beam-scorer``
choices, the record's stamp, the report -- comes from that table. A profile carries its own rules
(``profile.ScoringProfile``).
"""

from __future__ import annotations

from functools import cache
from importlib import import_module

from .profile import ScoringProfile
from .profile_names import DEFAULT_PROFILE, PROFILE_NAMES, PROFILE_TABLE, ProfileName

__all__ = ["DEFAULT_PROFILE", "PROFILE_NAMES", "ProfileName", "ScoringProfile", "get_profile"]


@cache
def _made(name: ProfileName) -> ScoringProfile:
    entry = PROFILE_TABLE[name]
    profile: ScoringProfile = getattr(import_module(entry.module), entry.cls)()
    return profile


def get_profile(profile: str | ScoringProfile) -> ScoringProfile:
    """The profile called ``profile`` (a profile object is returned as it is); a ValueError naming
    the choices otherwise."""
    if isinstance(profile, ScoringProfile):
        return profile
    for name in PROFILE_NAMES:
        if name == profile:
            return _made(name)
    raise ValueError(f"unknown scoring profile {profile!r}; choose one of {', '.join(PROFILE_NAMES)}")

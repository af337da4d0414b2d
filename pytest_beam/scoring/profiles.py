"""The scoring profiles by name: which published table a run's numbers can stand beside.

``PROFILES`` holds one object per name of ``names.PROFILE_NAMES`` (a test keeps them equal); every
other list of profile names -- the ``--beam-scorer`` choices, the record's stamp, the report --
comes from here or from ``names``. A profile carries its own rules (``profile.ScoringProfile``).
"""

from __future__ import annotations

from .beam_profiles import DefaultProfile, UpstreamProfile
from .omnimemeval import OmniMemEvalProfile
from .profile import ScoringProfile
from .profile_names import DEFAULT_PROFILE, PROFILE_NAMES, ProfileName

__all__ = ["DEFAULT_PROFILE", "PROFILE_NAMES", "PROFILES", "ProfileName", "ScoringProfile", "get_profile"]

PROFILES: dict[str, ScoringProfile] = {p.name: p for p in (DefaultProfile(), UpstreamProfile(), OmniMemEvalProfile())}


def get_profile(profile: str | ScoringProfile) -> ScoringProfile:
    """The profile called ``profile`` (a profile object is returned as it is); a ValueError naming
    the choices otherwise."""
    if isinstance(profile, ScoringProfile):
        return profile
    try:
        return PROFILES[profile]
    except KeyError:
        raise ValueError(f"unknown scoring profile {profile!r}; choose one of {', '.join(PROFILE_NAMES)}") from None

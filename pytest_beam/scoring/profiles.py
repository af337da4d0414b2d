"""Scoring profiles: which published table a run's numbers can stand beside.

A profile fixes every choice that moves a score: whether the judge prompt's ``<question>`` slot is
filled, what a judge's 0.5 counts for, and how event ordering is scored. Two records scored under
different profiles are not comparable, so the profile is recorded with every run.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["PROFILE_NAMES", "PROFILES", "ProfileName", "ScoringProfile", "get_profile"]

ProfileName = Literal["default", "upstream", "omnimemeval"]
PROFILE_NAMES: tuple[ProfileName, ...] = ("default", "upstream", "omnimemeval")


class ScoringProfile(BaseModel):
    """What one profile does, in words a record and a report can print."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: ProfileName
    question_in_prompt: bool
    half_credit: Literal["kept", "truncated to 0", "snapped to 0, 0.5 or 1"]
    event_ordering: str
    matches: str


PROFILES: dict[str, ScoringProfile] = {
    "default": ScoringProfile(
        name="default",
        question_in_prompt=True,
        half_credit="kept",
        event_ordering="event_f1 x (tau_b + 1) / 2 over the union of events, missing ones tied last",
        matches="this project's fixed port of BEAM's scorer",
    ),
    "upstream": ScoringProfile(
        name="upstream",
        question_in_prompt=False,
        half_credit="truncated to 0",
        event_ordering="(tau_b + 1) / 2 only, every answer line (blank ones too)",
        matches="BEAM's own code (mohammadtavakoli78/BEAM b2a3ee8) and the paper's tables",
    ),
    "omnimemeval": ScoringProfile(
        name="omnimemeval",
        question_in_prompt=True,
        half_credit="snapped to 0, 0.5 or 1",
        event_ordering="max(0, (tau_b + 1) / 2) over the rubric events found, times coverage (found / rubric events)",
        matches="MemTensor/OmniMemEval scripts/beam/beam_eval.py at 7df23bc1",
    ),
}


def get_profile(name: str) -> ScoringProfile:
    """The profile called ``name``; a ValueError naming the choices otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown scoring profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}") from None

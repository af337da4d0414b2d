"""The settings a type checker reads as Literals (mode, tool_mode, scorer) are the very choices the
options accept: one list each, so the annotation cannot drift from what a user may pass."""

from __future__ import annotations

from typing import get_args, get_type_hints

from pytest_beam.data.sets import Mode
from pytest_beam.scoring.names import PROFILE_NAMES, ProfileName
from pytest_beam.settings import MODES, OPTION_BY_NAME, TOOL_MODES, Settings


def test_the_literal_settings_are_the_options_choices():
    hints = get_type_hints(Settings, localns={"Mode": Mode, "ProfileName": ProfileName})
    assert sorted(get_args(hints["mode"])) == sorted(MODES) == sorted(OPTION_BY_NAME["mode"].choices)
    assert sorted(get_args(hints["tool_mode"])) == sorted(TOOL_MODES) == sorted(OPTION_BY_NAME["tool_mode"].choices)
    assert sorted(get_args(hints["scorer"])) == sorted(PROFILE_NAMES) == sorted(OPTION_BY_NAME["scorer"].choices)

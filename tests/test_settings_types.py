"""The settings a type checker reads as Literals (mode, tool_mode, scorer) are the very choices the
options accept: one list each, so the annotation cannot drift from what a user may pass."""

from __future__ import annotations

from typing import get_args, get_type_hints

from pytest_beam.data.sets import Mode
from pytest_beam.scoring.profile_names import PROFILE_NAMES, ProfileName
from pytest_beam.settings import MODES, OPTION_BY_NAME, TOOL_MODES, Settings


def test_the_literal_settings_are_the_options_choices():
    hints = get_type_hints(Settings, localns={"Mode": Mode, "ProfileName": ProfileName})
    assert sorted(get_args(hints["mode"])) == sorted(MODES) == sorted(OPTION_BY_NAME["mode"].choices)
    assert sorted(get_args(hints["tool_mode"])) == sorted(TOOL_MODES) == sorted(OPTION_BY_NAME["tool_mode"].choices)
    assert sorted(get_args(hints["scorer"])) == sorted(PROFILE_NAMES) == sorted(OPTION_BY_NAME["scorer"].choices)


def test_the_cassette_header_types_name_the_recorded_settings_and_question_set():
    """recorded_settings and question_set are typed as the header's TypedDicts (a cast): the keys
    the harness writes are the keys the types name, and each is a setting."""
    from dataclasses import fields

    from pytest_beam.llm.cassette import QuestionSet, RecordedSettings
    from pytest_beam.settings import QUESTION_SET, RECORDED_SETTINGS

    assert set(RecordedSettings.__annotations__) == set(RECORDED_SETTINGS)  # the table's rows that say recorded=True
    assert list(QuestionSet.__annotations__) == [*QUESTION_SET, "tier"]
    names = {f.name for f in fields(Settings)}
    assert set(RECORDED_SETTINGS) <= names and set(QuestionSet.__annotations__) <= names

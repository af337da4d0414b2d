"""The `pytest-beam` command's `--beam-*` options are the settings' own: each one's flag, metavar,
choices and help come from `settings.OPTIONS`, as pytest's do (issue 42 point 5: the command
retyped 16 help texts the table owns, and they had drifted)."""

from __future__ import annotations

import argparse

import pytest

from pytest_beam.cli import CHECK_OPTIONS, REJUDGE_OPTIONS, build_parser
from pytest_beam.settings import OPTION_BY_NAME


def _command(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize(("command", "options"), [("rejudge", REJUDGE_OPTIONS), ("judge-check", CHECK_OPTIONS)])
def test_each_beam_option_of_a_command_is_the_settings_option(command, options):
    actions = {a.option_strings[0]: a for a in _command(command)._actions if a.option_strings}
    beam = {flag: action for flag, action in actions.items() if flag.startswith("--beam-")}
    assert sorted(beam) == sorted(OPTION_BY_NAME[name].flag_name for name in options)
    for name in options:
        option, action = OPTION_BY_NAME[name], beam[OPTION_BY_NAME[name].flag_name]
        assert action.help is not None and action.help.startswith(option.help), (name, action.help)
        assert action.dest == name and action.metavar == name.upper() and action.default is None
        assert tuple(action.choices or ()) == (option.choices or ())


def test_a_command_refuses_a_choice_the_table_does_not_offer(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["rejudge", "RUN", "--beam-scorer", "nope"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err

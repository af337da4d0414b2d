"""`--beam-data DIR` written with a space, where that moves pytest off the project.

pytest picks its rootdir and ini file before any plugin's options are known, so the value of
`--beam-data ../shared/beam` is taken for a test path: the rootdir moves to a common ancestor and
the project's ini file (its markers, testpaths and beam_* keys) is not read. Reading the ini file
behind pytest's back still left the rootdir, the node ids and the cache folder moved; so when a
spaced value did move pytest, the run stops with one line saying to write `--beam-data=DIR`.
Where it moved nothing (a folder inside the project), both spellings behave the same.
"""

from __future__ import annotations

import configparser
import tomllib
from itertools import pairwise
from pathlib import Path

import pytest

from ..settings import OPTION_BY_NAME, PATH_OPTIONS

INI_NAMES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def spaced_path_values(args: list[str]) -> list[tuple[str, str]]:
    """(flag, value) for each path option whose value was written as its own argument."""
    flags = {OPTION_BY_NAME[name].flag_name for name in PATH_OPTIONS}
    return [(flag, value) for flag, value in pairwise(args) if flag in flags and not value.startswith("-")]


def _is_pytest_config(path: Path) -> bool:
    if path.name == "pyproject.toml":
        return "pytest" in tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
    if path.name in ("pytest.ini", ".pytest.ini"):
        return True
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path, encoding="utf-8")
    return parser.has_section("tool:pytest" if path.name == "setup.cfg" else "pytest")


def project_ini(start: Path) -> Path | None:
    """The ini file pytest finds from `start` upwards when no test path is given."""
    for folder in (start, *start.parents):
        for name in INI_NAMES:
            candidate = folder / name
            if candidate.is_file() and _is_pytest_config(candidate):
                return candidate
    return None


def spaced_value_problem(config: pytest.Config) -> str | None:
    """Why a spaced path value cannot be used (it moved pytest's rootdir or ini file), else None."""
    if config.option.inifilename:
        return None  # chosen explicitly (`-c FILE`): nothing was guessed from the value; a
        # --rootdir alone does not help, pytest still looks for the ini file above the value
    here = config.invocation_params.dir
    for flag, value in spaced_path_values([str(a) for a in config.invocation_params.args]):
        if not (here / value).exists():
            continue  # pytest ignores a path that does not exist
        expected = project_ini(here)
        if expected is not None:
            moved = config.inipath != expected or config.rootpath != expected.parent
            wanted = f"rootdir {expected.parent} and ini file {expected}"
        else:
            moved = not (here / value).resolve().is_relative_to(here)
            wanted = f"rootdir {here}"
        if moved:
            return (f"write {flag}={value} (with '='): written as its own argument, pytest took {value} "
                    f"for a test path when it chose its rootdir and ini file, before pytest-beam's "
                    f"options were known, and got rootdir {config.rootpath} and ini file "
                    f"{config.inipath or 'none'} instead of {wanted}")
    return None

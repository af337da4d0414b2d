"""The project's ini file when pytest missed it: `--beam-data DIR` written with a space.

pytest picks its rootdir and ini file before any plugin's options are known, so the value of
`--beam-data ../shared/beam` is taken for a test path: the rootdir moves to a common ancestor and
the project's ini file (its beam_* keys) is not read. When a beam option's value was given as a
separate argument, the plugin finds the ini file itself, the way pytest would have without that
value (from the invocation directory upwards), and reads its beam_* keys from there.
"""

from __future__ import annotations

import configparser
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class ProjectIni:
    path: Path | None
    values: dict[str, str]

    def get(self, name: str) -> str | None:
        return self.values.get(name)


def spaced_beam_values(args: list[str]) -> list[str]:
    """Values written after a `--beam-*` flag as their own argument (pytest read them as paths)."""
    return [value for flag, value in zip(args, args[1:])
            if flag.startswith("--beam-") and "=" not in flag and not value.startswith("-")]


def _read(path: Path) -> dict[str, str] | None:
    """The [pytest] keys of one candidate file, or None when it is not a pytest config."""
    if path.name == "pyproject.toml":
        tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest")
        if tool is None:
            return None
        table = tool.get("ini_options", tool)
        return {k: (" ".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in table.items()}
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path, encoding="utf-8")
    section = "tool:pytest" if path.name == "setup.cfg" else "pytest"
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if path.name in ("pytest.ini", ".pytest.ini") else None


def find_ini(start: Path) -> ProjectIni:
    for folder in (start, *start.parents):
        for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
            candidate = folder / name
            if candidate.is_file():
                values = _read(candidate)
                if values is not None:
                    return ProjectIni(candidate, values)
    return ProjectIni(None, {})


def missed_ini(config: pytest.Config) -> ProjectIni | None:
    """The project's ini when a spaced beam option's value moved pytest off it; else None."""
    args = [str(a) for a in config.invocation_params.args]
    if config.option.inifilename or not spaced_beam_values(args):
        return None
    found = find_ini(config.invocation_params.dir)
    if found.path is None or found.path == config.inipath:
        return None
    return found

"""Render docs/configuration.md's options table from the option table in `pytest_beam.settings`.

The settings module declares every option once (flag, ini key, variables, default, choices, help),
so the page is generated from it rather than written by hand: a new option shows up in the doc
when the doc is regenerated, and tests/test_config_doc.py fails until it is. The hand-written
prose around the table stays outside the markers and is left alone.

    python -m pytest_beam.docs_config --write    # rewrite the table in docs/configuration.md
    python -m pytest_beam.docs_config            # print the table
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .settings import OPTIONS, Option

BEGIN = "<!-- BEGIN GENERATED OPTIONS: python -m pytest_beam.docs_config --write -->"
END = "<!-- END GENERATED OPTIONS -->"
REGENERATE = "python -m pytest_beam.docs_config --write"
DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"

_HEADER = ("| flag | ini key | environment | default | choices | what it does |\n"
           "|---|---|---|---|---|---|")


def _cell(text: str) -> str:
    """Table-safe text: a pipe would split the cell, and `<model>` would vanish as an HTML tag."""
    return text.replace("|", "\\|").replace("<", "&lt;")


def _code(text: str) -> str:
    return f"`{text}`"


def render_row(option: Option) -> str:
    """One option as a table row; a secret has no flag and no ini key, only its variables."""
    flag = "—" if option.env_only else _code(option.flag_name)
    ini = "—" if option.env_only else _code(option.ini_name)
    env = ", ".join(_code(name) for name in option.env_names)
    default = "" if option.default is None else _cell(str(option.default))
    choices = ", ".join(_code(c) for c in option.choices) if option.choices else ""
    return f"| {flag} | {ini} | {env} | {default} | {choices} | {_cell(option.help)} |"


def render_table(options: tuple[Option, ...] = OPTIONS) -> str:
    """The generated block, markers included, exactly as it must stand in the doc."""
    rows = "\n".join(render_row(o) for o in options)
    return f"{BEGIN}\n{_HEADER}\n{rows}\n{END}"


def generated_part(doc_text: str) -> str:
    """The block between the markers (markers included) of a doc's text; '' when absent."""
    start = doc_text.find(BEGIN)
    stop = doc_text.find(END, start + 1) if start >= 0 else -1
    return "" if start < 0 or stop < 0 else doc_text[start:stop + len(END)]


def rewrite(doc_text: str, table: str) -> str:
    """The doc with its generated block replaced by `table`; the prose around it untouched."""
    old = generated_part(doc_text)
    if not old:
        raise ValueError(f"no generated block ({BEGIN} ... {END}) in the doc")
    return doc_text.replace(old, table, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_beam.docs_config", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the table in the doc instead of printing it")
    parser.add_argument("--doc", type=Path, default=DOC, help=f"the doc to rewrite (default {DOC})")
    args = parser.parse_args(argv)
    table = render_table()
    if not args.write:
        print(table)
        return 0
    text = args.doc.read_text(encoding="utf-8")
    args.doc.write_text(rewrite(text, table), encoding="utf-8")
    print(f"wrote the options table of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

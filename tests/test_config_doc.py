"""docs/configuration.md's options table is the one the option table in pytest_beam/settings.py
renders: a new or changed option fails here until the doc is regenerated."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_beam.docs_config import (
    BEGIN,
    DOC,
    END,
    REGENERATE,
    generated_part,
    main,
    render_row,
    render_table,
    rewrite,
)
from pytest_beam.settings import OPTION_BY_NAME, OPTIONS, Option


def test_the_doc_holds_the_table_the_options_render():
    doc = DOC.read_text(encoding="utf-8")
    assert generated_part(doc) == render_table(), (
        f"docs/configuration.md is out of date with pytest_beam/settings.py: run `{REGENERATE}`")


def test_every_option_has_its_row_in_the_doc():
    doc = generated_part(DOC.read_text(encoding="utf-8"))
    rows = [line for line in doc.splitlines() if line.startswith("| ") and not line.startswith("| flag ")]
    assert len(rows) == len(OPTIONS)
    for option in OPTIONS:
        if option.flag:
            assert f"| `{option.flag_name}` | `{option.ini_name}` |" in doc, option.name
        assert f"`BEAM_{option.name.upper()}`" in doc, option.name
    for flag in ("--beam-conversations", "--beam-system", "--beam-context-tokens", "--beam-retrieval-k"):
        assert f"| `{flag}` |" in doc, flag


def test_a_row_carries_flag_ini_key_variables_default_choices_and_help():
    assert render_row(OPTION_BY_NAME["record_mode"]) == (
        "| `--beam-record-mode` | `beam_record_mode` | `BEAM_RECORD_MODE` | off "
        "| `off`, `none`, `once`, `new_episodes`, `all` "
        "| Cassette mode: off, none (replay only), once, new_episodes, all. |")
    assert render_row(OPTION_BY_NAME["context_tokens"]).startswith(
        "| `--beam-context-tokens` | `beam_context_tokens` | `BEAM_CONTEXT_TOKENS` | 120000 |  | ")
    # a secret: no flag, no ini key, its variables only
    assert render_row(OPTION_BY_NAME["api_key"]).startswith("| — | — | `BEAM_API_KEY`, `OPENAI_API_KEY` |  |  | ")


def test_a_cell_cannot_break_the_table_or_hide_as_html():
    row = render_row(Option("x_y", "a | b with endpoint:<model>", "1|2"))
    assert row == "| `--beam-x-y` | `beam_x_y` | `BEAM_X_Y` | 1\\|2 |  | a \\| b with endpoint:&lt;model> |"


def test_a_new_option_makes_the_doc_out_of_date():
    doc = DOC.read_text(encoding="utf-8")
    more = (*OPTIONS, Option("brand_new", "A new option nobody documented."))
    assert generated_part(doc) != render_table(more)
    assert "`--beam-brand-new`" in render_table(more)


def test_rewrite_replaces_the_table_and_keeps_the_prose(tmp_path: Path):
    doc = tmp_path / "configuration.md"
    doc.write_text(f"# Title\n\nprose before\n\n{BEGIN}\nstale\n{END}\n\nprose after\n", encoding="utf-8")
    assert main(["--write", "--doc", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text == f"# Title\n\nprose before\n\n{render_table()}\n\nprose after\n"
    with pytest.raises(ValueError, match="no generated block"):
        rewrite("no markers here", render_table())

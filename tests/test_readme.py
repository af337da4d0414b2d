"""The README's commands are the ones a newcomer can run: the embedded lite run first, the tests
second, every usage line through the venv, and the tox environments that exist."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def readme(repo_root) -> str:
    return (repo_root / "README.md").read_text(encoding="utf-8")


def bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_the_first_command_is_the_embedded_lite_run_on_a_fresh_clone(readme):
    first, second = bash_blocks(readme)[:2]
    steps = [s.strip() for s in first.split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    assert steps[1] == ".venv/bin/pip install -e '.[local]'"
    assert steps[-1] == "BEAM_DATA=../shared/beam .venv/bin/pytest -m lite"  # no endpoint: the embedded model
    assert "BEAM_BASE_URL" not in first and "--beam-base-url" not in first
    assert second.endswith("BEAM_DATA=../shared/beam .venv/bin/pytest tests -rs")


def test_the_live_stage_runs_the_same_command(readme):
    from tests.live.test_live_lite import readme_command

    args = readme_command(Path("/out"), Path("/c.jsonl"))
    assert args[1:5] == ["-m", "pytest", "-m", "lite"]
    assert not any(a.startswith(("--beam-base-url", "--beam-model")) for a in args)


def test_usage_lines_go_through_the_venv(readme):
    section = readme.split("## How people use it", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.startswith("    ")]
    assert lines and all(line.startswith((".venv/bin/pytest", ".venv/bin/pytest-beam", "export BEAM_DATA="))
                         for line in lines), lines
    endpoint = readme.split("## Running against a real endpoint", 1)[1].split("\n## ", 1)[0]
    assert not re.search(r"(^|\s)pytest\s", endpoint), "a bare pytest in the endpoint examples"


def test_the_tox_environments_named_in_the_readme_exist(readme, repo_root):
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(repo_root / "tox.ini")
    envs = {name.split(":", 1)[1] for name in tox.sections() if name.startswith("testenv:")}
    paragraph = readme.split("The same through tox", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`([a-z-]+)`", paragraph)) - {"tox"}
    assert named == envs, (named, envs)

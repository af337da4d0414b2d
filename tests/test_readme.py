"""The README's commands are the ones a newcomer can run: the embedded lite run first, the tests
second, every usage line through the venv, and the tox environments that exist. The README stays
short (the rest is under docs/) and every link it and the docs pages give leads to a file there."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def readme(repo_root) -> str:
    return (repo_root / "README.md").read_text(encoding="utf-8")


def bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)]


def test_the_first_command_is_the_embedded_lite_run_on_a_fresh_clone(readme):
    first, second = bash_blocks(readme)[:2]
    steps = [s.strip() for s in first.split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    assert steps[1] == ".venv/bin/pip install -e '.[local]'"
    assert steps[-1] == "BEAM_DATA=../shared/beam .venv/bin/pytest -m lite"  # no endpoint: the embedded model
    assert "BEAM_BASE_URL" not in first and "--beam-base-url" not in first
    # two workers, a module on one of them (tests/conftest.py xdist_group)
    assert second.endswith("BEAM_DATA=../shared/beam .venv/bin/pytest tests -rs -n 2 --dist loadgroup")


def test_the_live_stage_runs_the_same_command(readme, monkeypatch):
    """Where the live stage and the recorders run the command themselves (CI keeps the README's own run)."""
    from tests.live.first_command import embedded_env, readme_command

    args = readme_command(Path("/out"), Path("/c.jsonl"))
    assert bash_blocks(readme)[0].endswith(".venv/bin/pytest -m lite") and args[1:5] == ["-m", "pytest", "-m", "lite"]
    assert not any(a.startswith(("--beam-base-url", "--beam-model")) for a in args)
    monkeypatch.setenv("BEAM_BASE_URL", "http://127.0.0.1:9/v1")
    assert "BEAM_BASE_URL" not in embedded_env(Path("/data"))  # no endpoint: the embedded model


def test_usage_lines_go_through_the_venv(readme):
    section = readme.split("## How people use it", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.startswith("    ")]
    assert lines and all(line.startswith((".venv/bin/pytest", ".venv/bin/pytest-beam", "export BEAM_DATA="))
                         for line in lines), lines


def test_endpoint_examples_go_through_the_venv(repo_root):
    # the endpoint examples moved from the README to docs/endpoints.md (issue 28: a short README)
    doc = (repo_root / "docs" / "endpoints.md").read_text(encoding="utf-8")
    endpoint = doc.split("## Running against a real endpoint", 1)[1].split("\n## ", 1)[0]
    assert ".venv/bin/pytest" in endpoint
    assert not re.search(r"(^|\s)pytest\s", endpoint), "a bare pytest in the endpoint examples"


def test_the_tox_environments_named_in_the_readme_exist(readme, repo_root):
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(repo_root / "tox.ini")
    envs = {name.split(":", 1)[1] for name in tox.sections() if name.startswith("testenv:")}
    paragraph = readme.split("The same through tox", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`([a-z-]+)`", paragraph)) - {"tox"}
    assert named == envs, (named, envs)


README_MAX_LINES = 160


def test_the_readme_is_short(readme):
    assert len(readme.splitlines()) <= README_MAX_LINES, "move detail to a page under docs/ and link it"


def markdown_links(text: str) -> list[str]:
    """Relative link targets of a markdown text (web links and in-page anchors left out)."""
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not t.startswith(("http://", "https://", "#"))]


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.DOTALL), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_readme_links_every_docs_page_and_each_link_resolves(readme, repo_root):
    links = markdown_links(readme)
    docs = {link.split("#", 1)[0] for link in links if link.startswith("docs/")}
    assert docs == {f"docs/{p.name}" for p in (repo_root / "docs").glob("*.md")}
    for link in links:
        assert (repo_root / link.split("#", 1)[0]).is_file(), link


def test_links_between_the_docs_pages_resolve(repo_root):
    for page in sorted((repo_root / "docs").glob("*.md")):
        for link in markdown_links(page.read_text(encoding="utf-8")):
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve()
            assert target.is_file(), f"{page.name}: {link}"
            if anchor:
                assert anchor in heading_anchors(target.read_text(encoding="utf-8")), f"{page.name}: {link}"

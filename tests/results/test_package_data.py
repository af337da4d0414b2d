"""pyproject.toml packages the data files the code loads, and no pattern that matches nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _package_dir(package: str, package_dirs: dict[str, str]) -> Path:
    if package in package_dirs:
        return REPO / package_dirs[package]
    return REPO.joinpath(*package.split("."))


def test_every_package_data_pattern_matches_a_file():
    config = _config()
    packages = set(config["packages"])
    for package, patterns in config["package-data"].items():
        assert package in packages, f"package-data for {package}, which is not packaged"
        base = _package_dir(package, config.get("package-dir", {}))
        for pattern in patterns:
            assert list(base.glob(pattern)), f"{package}: {pattern!r} matches no file in {base}"


def test_the_data_files_the_code_loads_are_packaged():
    config = _config()
    loaded = ["pytest_beam/results/report_template.html", "pytest_beam/services/neo4j_pom.xml",
              "pytest_beam/memory/minilm_vocab.txt"]
    for rel in loaded:
        path = REPO / rel
        assert path.is_file(), rel
        package = ".".join(path.parent.relative_to(REPO).parts)
        assert any(path.match(pattern) for pattern in config["package-data"].get(package, [])), rel


def test_every_package_of_the_source_tree_is_packaged():
    """A subpackage missing from pyproject's list works in an editable install and is absent from a
    wheel (pytest_beam.cli, made a package, was): every folder with an __init__.py is listed."""
    packages = set(_config()["packages"])
    found = {".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "pytest_beam").rglob("__init__.py")}
    assert found - packages == set(), sorted(found - packages)

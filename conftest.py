"""The repo's own test wiring.

`pytester` runs pytest-beam sessions inside tests; BEAM_DATA points the tests at the offline
copy of the data (../shared/beam beside the repo in CI).
"""

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def beam_data_dir() -> Path:
    path = Path(os.environ.get("BEAM_DATA", REPO.parent / "shared" / "beam")).resolve()
    if not (path / "chats" / "100K").is_dir():
        pytest.fail(f"BEAM data not found at {path}: set BEAM_DATA to a copy in the upstream layout")
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO

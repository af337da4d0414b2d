"""Where the shared BEAM files live for tests: $BEAM_DATA, else ../shared/beam/ beside the repo."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def beam_file(name: str) -> Path:
    """The path of a shared BEAM file; skips the test if it is absent."""
    override = os.environ.get("BEAM_DATA")
    base = Path(override) if override else REPO_ROOT.parent / "shared" / "beam"
    path = base / name
    if not path.is_file():
        pytest.skip(f"{name} not found under {base} (set BEAM_DATA)")
    return path

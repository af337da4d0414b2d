"""The README's first command as the live stage and the cassette recorders run it themselves.

`pytest -m lite` with no endpoint of any kind (so the plugin starts the embedded model), plus where
the run keeps its record, cassette and JUnit XML. tests/test_readme.py holds it to the README's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def readme_command(out: Path, cassette: Path, *extra: str) -> list[str]:
    """`pytest -m lite` as the README gives it (BEAM_DATA in the environment, no endpoint), plus
    where this run keeps its record, its cassette and its JUnit XML."""
    return [sys.executable, "-m", "pytest", "-m", "lite", "-p", "no:randomly", "-p", "no:cacheprovider",
            f"--beam-results={out / 'results'}", "--beam-record-mode=all", f"--beam-cassette={cassette}",
            "--beam-cache=off", f"--junitxml={out / 'live.xml'}", *extra]


def embedded_env(beam_data: Path, **extra: str) -> dict[str, str]:
    """No endpoint of any kind, so the plugin starts the embedded model."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BEAM_BASE_URL", "BEAM_MODEL", "OPENAI_", "BEAM_API_KEY", "PYTEST_ADDOPTS"))}
    return {**env, "BEAM_DATA": str(beam_data), **extra}

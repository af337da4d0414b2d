"""The live tests' one embedded model: the real GGUF on llama.cpp's server, started once for the
tests that only talk to it (each start verifies the 1.1 GB file and loads the model)."""

from __future__ import annotations

import pytest

from pytest_beam.llm import embedded


@pytest.fixture(scope="session")
def embedded_model():
    reason = embedded.unavailable_reason()
    if reason is not None:
        pytest.skip(f"embedded model not installed: {reason}")
    lines: list[str] = []
    model = embedded.EmbeddedModel()
    model.start(progress=lines.append)
    assert any("starting llama.cpp's server" in line for line in lines), lines
    yield model
    model.stop()

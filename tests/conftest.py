"""The project's own tests (not the benchmark): what every test process needs."""

from __future__ import annotations

import os

# The scripted model server (a declared test double for the model) for every test that asks for it.
from tests.model_server import model_server, model_server_factory  # noqa: F401


def pytest_configure() -> None:
    # This session has read PYTEST_ADDOPTS already. The pytest runs the tests start as subprocesses
    # must not inherit it: CI sets --junitxml there, and a run's last lines (which tests read)
    # would then end in "generated xml file", and every subprocess would overwrite CI's XML.
    os.environ.pop("PYTEST_ADDOPTS", None)

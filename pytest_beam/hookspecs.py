"""Hooks pytest-beam offers to conftest files and plugins."""

import pytest


@pytest.hookspec(firstresult=True)
def pytest_beam_make_system(context):
    """Return the MemorySystem to benchmark on one conversation (`pytest_beam.system`).

    `context` is a `pytest_beam.system.SystemContext`. The first non-None result wins; the
    built-in Agentic GraphRAG on Neo4j answers last, so a conftest.py that returns its own
    system replaces it for every conversation.
    """

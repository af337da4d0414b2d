"""Hooks pytest-beam offers to conftest files and plugins."""

import pytest


@pytest.hookspec(firstresult=True)
def pytest_beam_make_system(context):
    """Return the MemorySystem to benchmark on one conversation (`pytest_beam.system`).

    `context` is a `pytest_beam.system.SystemContext`; `context.system_name` is the system the
    run asks for (`--beam-system`, default `graphrag`). The first non-None result wins; the
    built-in provider answers last with the registry's system of that name (pytest_beam.systems),
    so a conftest.py that returns its own system whatever the name replaces the default
    `graphrag` (and every other selected system: look at `context.system_name` when you compare).
    """


@pytest.hookspec
def pytest_beam_system_names():
    """Return the names of the systems this conftest or plugin provides, to be selectable in
    `--beam-system` (e.g. `["my-memory"]`).

    The harness then calls `pytest_beam_make_system` with `context.system_name` set to the
    selected name; return your system for your names and None for the others. Answers are
    recorded under the selected name.
    """

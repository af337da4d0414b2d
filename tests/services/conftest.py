"""Fixtures of the services room: the session's one shared Neo4j (tests/conftest.py) as a
service, plus a driver on it. Tests that must kill or stop a server start their own."""

from __future__ import annotations

import pytest

from pytest_beam.services import open_driver
from tests.small_disk import small_disk  # noqa: F401


@pytest.fixture(scope="session")
def local_neo4j(shared_neo4j):
    """A started local Neo4j 5.26 service shared by the room's integration tests."""
    return shared_neo4j


@pytest.fixture(scope="session")
def neo4j_driver(local_neo4j):
    driver = open_driver(local_neo4j.connection)
    yield driver
    driver.close()

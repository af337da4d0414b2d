"""Fixtures of the services room: ONE local Neo4j for the whole session (a JVM start costs
seconds), plus a driver on it. Tests that must kill or stop a server start their own."""

from __future__ import annotations

import pytest

from pytest_beam.services import open_driver
from pytest_beam.services.local import LocalNeo4jProvider
from tests.small_disk import small_disk  # noqa: F401


def _skip_if_unavailable() -> None:
    why = LocalNeo4jProvider.unavailable_reason()
    if why:
        pytest.skip(f"local Neo4j provider unavailable: {why}")


@pytest.fixture(scope="session")
def neo4j_provider(tmp_path_factory: pytest.TempPathFactory) -> LocalNeo4jProvider:
    _skip_if_unavailable()
    return LocalNeo4jProvider(work_dir=tmp_path_factory.mktemp("neo4j"), heap="512m")


@pytest.fixture(scope="session")
def local_neo4j(neo4j_provider: LocalNeo4jProvider):
    """A started local Neo4j 5.26 service shared by the room's integration tests."""
    service = neo4j_provider.create("shared")
    service.start()
    yield service
    service.stop()


@pytest.fixture(scope="session")
def neo4j_driver(local_neo4j):
    driver = open_driver(local_neo4j.connection)
    yield driver
    driver.close()

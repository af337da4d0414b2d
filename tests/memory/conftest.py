"""Shared by the memory tests (ingest and agent): one real Neo4j for the session, cleaned per test.

`neo4j_conn` is the session's one shared local Neo4j (tests/conftest.py, which the services room
uses too), or, with `BEAM_TEST_NEO4J` set to a provider spec other than "local" (a bolt URI uses
an existing server), a Neo4j of that provider started once for the session and stopped at the
end; it skips the test when no provider can run here. `clean_neo4j` gives a test an empty
database and an open driver: `(driver, database)`.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def neo4j_conn(request: pytest.FixtureRequest, tmp_path_factory):
    from pytest_beam.services import Neo4jServiceError, select_provider

    spec = os.environ.get("BEAM_TEST_NEO4J", "local")
    if spec == "local":
        yield request.getfixturevalue("shared_neo4j").connection
        return
    try:
        provider = select_provider(spec, work_dir=tmp_path_factory.mktemp("neo4j"))
        service = provider.create("memory-tests")
        conn = service.start()
    except Neo4jServiceError as exc:
        pytest.skip(f"no Neo4j for the memory tests: {exc}")
    try:
        yield conn
    finally:
        service.stop()


@pytest.fixture
def clean_neo4j(neo4j_conn):
    from pytest_beam.services import open_driver

    driver = open_driver(neo4j_conn)
    database = neo4j_conn.database
    with driver.session(database=database) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()
    try:
        yield driver, database
    finally:
        driver.close()


def pytest_configure(config):
    config.addinivalue_line("markers", "neo4j: needs a real Neo4j (started by the services layer)")

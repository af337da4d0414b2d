"""A Neo4j with the plugin procedures a system's library calls, and no others (issue 44: neo4j-graphrag's APOC).

Real local servers: one started with the three APOC procedures neo4j-graphrag calls, which must
run, while APOC's others (apoc.load.json fetches URLs) and every other server's stay absent; a
server without them is refused with one line before a library fails on it.
"""

from __future__ import annotations

import pytest

from pytest_beam.services import Neo4jServiceError
from pytest_beam.services.access import open_driver, run_autocommit
from pytest_beam.services.procedures import require_procedures
from pytest_beam.systems.neo4j_graphrag_system import PROCEDURES

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]


def _procedures(connection) -> set[str]:
    driver = open_driver(connection)
    try:
        rows = run_autocommit(driver, connection.database, "SHOW PROCEDURES YIELD name RETURN name")
        return {r["name"] for r in rows}
    finally:
        driver.close()


def test_a_server_with_apoc_holds_the_procedures_asked_for_and_no_other(neo4j_provider):
    service = neo4j_provider.create("apoc", PROCEDURES)
    try:
        connection = service.start()
        names = _procedures(connection)
        assert {n for n in names if n.startswith("apoc.")} == set(PROCEDURES)
        assert {"db.index.fulltext.queryNodes", "db.index.vector.queryNodes"} <= names  # Neo4j's own stay
        driver = open_driver(connection)
        try:  # the writer's call works: one relationship merged between two nodes
            rows = run_autocommit(driver, connection.database,
                                  "CREATE (a:A), (b:B) WITH a, b CALL apoc.merge.relationship(a, 'KNOWS', {}, "
                                  "{since: 1}, b, {}) YIELD rel RETURN type(rel) AS t, rel.since AS since")
        finally:
            driver.close()
        assert rows == [{"t": "KNOWS", "since": 1}]
    finally:
        service.stop()


def test_a_server_without_them_is_refused_in_one_line(neo4j_provider):
    service = neo4j_provider.create("plain")
    try:
        connection = service.start()
        assert not {n for n in _procedures(connection) if n.startswith("apoc.")}
        with pytest.raises(Neo4jServiceError) as caught:
            require_procedures(connection, PROCEDURES, "the server at bolt://example")
    finally:
        service.stop()
    message = str(caught.value)
    assert message.startswith("the server at bolt://example lacks the procedures apoc.create.addLabels, "
                              "apoc.merge.relationship, apoc.refactor.mergeNodes that the system needs")
    assert "\n" not in message


def test_a_procedure_no_known_plugin_holds_is_refused_before_any_start(neo4j_provider):
    with pytest.raises(Neo4jServiceError, match=r"no plugin the local provider knows holds gds\.pageRank"):
        neo4j_provider.create("gds", ["gds.pageRank"])

"""The agent's Cypher tool against a hostile (or unlucky) query, on a real local Neo4j of its own:
LOAD CSV is refused by what the server plans and by the server's configuration (nothing is
fetched), and a query that wants more memory than the server has fails as a tool error while the
server lives on and the graph is unchanged (issue 15, points 4 and 5)."""

from __future__ import annotations

import http.server
import threading
from typing import Any, Iterator

import pytest

from pytest_beam.services import open_driver, run_read

pytestmark = pytest.mark.neo4j


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any, str]]:
    """(service, driver, database) of a local server with a small heap, holding a small graph."""
    from pytest_beam.services.local import LocalNeo4jProvider

    why = LocalNeo4jProvider.unavailable_reason()
    if why:
        pytest.skip(f"local Neo4j provider unavailable: {why}")
    service = LocalNeo4jProvider(work_dir=tmp_path_factory.mktemp("guard"), heap="256m").create("conv-guard")
    conn = service.start()
    driver = open_driver(conn)
    # a dense little graph: variable-length paths over it explode combinatorially
    driver.execute_query("UNWIND range(1, 12) AS i CREATE (:N {i: i})", database_=conn.database)
    driver.execute_query("MATCH (a:N), (b:N) WHERE a <> b CREATE (a)-[:R]->(b)", database_=conn.database)
    try:
        yield service, driver, conn.database
    finally:
        driver.close()
        service.stop()


@pytest.fixture
def http_hits() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on 127.0.0.1 that serves a CSV and records every request path."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            hits.append(self.path)
            body = b"secret,value\n1,2\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/csv")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], hits
    finally:
        server.shutdown()
        server.server_close()


def _count(driver: Any, database: str) -> tuple[int, int]:
    rows = run_read(driver, database, "MATCH (n) WITH count(n) AS n OPTIONAL MATCH ()-[r]->() "
                    "RETURN n, count(r) AS r", {})
    return rows[0]["n"], rows[0]["r"]


@pytest.mark.parametrize("spelling", [
    "LOAD/**/CSV FROM '{url}' AS row RETURN row",
    "load\ncsv with headers from '{url}' AS row RETURN row",
    "CALL () {{ LOAD CSV FROM '{url}' AS row RETURN row }} RETURN row",
])
def test_load_csv_is_refused_by_plan_and_nothing_is_fetched(guarded, http_hits, spelling):
    from pytest_beam.memory.tools import ToolBox

    service, driver, database = guarded
    port, hits = http_hits
    query = spelling.format(url=f"http://127.0.0.1:{port}/x.csv")
    result = ToolBox(driver, database, None).call("cypher", {"query": query})
    assert result.is_error and "LOAD CSV" in result.text, result.text
    assert "secret" not in result.text and hits == []


def test_the_server_itself_refuses_load_csv(guarded, http_hits):
    """Below the plan check: the local server's configuration blocks LOAD CSV from URLs and files."""
    service, driver, database = guarded
    port, hits = http_hits
    import neo4j.exceptions

    for url in (f"http://127.0.0.1:{port}/x.csv", "file:///etc/hostname"):
        with pytest.raises(neo4j.exceptions.Neo4jError):
            run_read(driver, database, f"LOAD CSV FROM '{url}' AS row RETURN row", {})
    assert hits == []


@pytest.mark.parametrize("query", [
    "WITH [x IN range(1, 40000000) | x] AS l RETURN size(l)",
    "MATCH p = (:N)-[:R*1..12]->(:N) WITH collect(p) AS ps RETURN size(ps)",
])
def test_a_query_too_big_for_memory_is_a_tool_error_and_the_server_lives(guarded, query, caplog):
    from pytest_beam.memory.tools import ToolBox, ToolLimits
    from pytest_beam.services import ReadLimits

    service, driver, database = guarded
    before = _count(driver, database)
    box = ToolBox(driver, database, None, ToolLimits(reads=ReadLimits(timeout_s=60.0, max_rows=100)))
    with caplog.at_level("WARNING", logger="neo4j"):
        result = box.call("cypher", {"query": query})
    assert result.is_error, result.text
    assert "memory" in result.text.lower() or "took too long" in result.text, result.text  # load decides which
    assert not [r for r in caplog.records if "retried" in r.getMessage()]  # run once, not again and again
    assert service.is_alive(), service.log_tail(20)
    assert _count(driver, database) == before
    assert not box.call("cypher", {"query": "RETURN 1 AS ok"}).is_error

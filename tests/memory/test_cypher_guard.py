"""The agent's Cypher tool against a hostile (or unlucky) query, on a real local Neo4j of its own:
LOAD CSV is refused by what the server plans and by the server's configuration (nothing is
fetched); range() and deep or unbounded variable-length expands are refused by plan; a query
whose tracked memory passes the transaction cap fails as a tool error; the server lives on and
the graph is unchanged (issue 15, points 4 and 5)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

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
        def do_GET(self) -> None:
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

    _service, driver, database = guarded
    port, hits = http_hits
    query = spelling.format(url=f"http://127.0.0.1:{port}/x.csv")
    result = ToolBox(driver, database, None).call("cypher", {"query": query})
    assert result.is_error and "LOAD CSV" in result.text, result.text
    assert "secret" not in result.text and hits == []


def test_the_server_itself_refuses_load_csv(guarded, http_hits):
    """Below the plan check: the local server's configuration blocks LOAD CSV from URLs and files."""
    _service, driver, database = guarded
    port, hits = http_hits
    import neo4j.exceptions

    for url in (f"http://127.0.0.1:{port}/x.csv", "file:///etc/hostname"):
        with pytest.raises(neo4j.exceptions.Neo4jError):
            run_read(driver, database, f"LOAD CSV FROM '{url}' AS row RETURN row", {})
    assert hits == []


@pytest.mark.parametrize("query", [
    "MATCH (a:N), (b:N), (c:N), (d:N), (e:N), (f:N) WITH collect([a, b, c, d, e, f]) AS l RETURN size(l)",
])
def test_a_query_too_big_for_memory_is_a_tool_error_and_the_server_lives(guarded, query, caplog):
    from pytest_beam.memory.tool_specs import ToolLimits
    from pytest_beam.memory.tools import ToolBox
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


@pytest.mark.parametrize("query", [
    "MATCH p = (a)-[*1..30]-(b) RETURN count(p)",
    "MATCH p = (:N)-[*]-(:N) RETURN count(p) AS n",
])
def test_a_query_that_would_run_for_ages_is_refused_and_the_server_lives(guarded, query):
    """Counting deep variable-length paths allocates nothing the memory caps see, and the server
    does not check the transaction's timeout while it projects paths: found hanging an agent's
    question for 10+ minutes in a full run. It must come back as a tool error, soon."""
    from pytest_beam.memory.cypher_tool import MAX_HOPS
    from pytest_beam.memory.tool_specs import ToolLimits
    from pytest_beam.memory.tools import ToolBox
    from pytest_beam.services import ReadLimits

    service, driver, database = guarded
    before = _count(driver, database)
    box = ToolBox(driver, database, None, ToolLimits(reads=ReadLimits(timeout_s=5.0, max_rows=100)))
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(box.call("cypher", {"query": query})), daemon=True)
    worker.start()
    worker.join(120)  # a hang detector, not a speed claim: the limit is 5 s
    assert done, "the agent's query was still running after 120 s"
    result = done[0]
    assert result.is_error, result.text
    assert f"deeper than {MAX_HOPS} hops" in result.text, result.text
    assert service.is_alive(), service.log_tail(20)
    assert _count(driver, database) == before
    assert not box.call("cypher", {"query": "RETURN 1 AS ok"}).is_error


def test_a_bounded_shallow_expand_still_runs(guarded):
    from pytest_beam.memory.tool_specs import ToolLimits
    from pytest_beam.memory.tools import ToolBox
    from pytest_beam.services import ReadLimits

    _, driver, database = guarded
    box = ToolBox(driver, database, None, ToolLimits(reads=ReadLimits(timeout_s=30.0, max_rows=100)))
    result = box.call("cypher", {"query": "MATCH (a:N {i: 1})-[:R*2]->(b:N) RETURN count(DISTINCT b) AS n"})
    assert not result.is_error, result.text
    assert '"n": 12' in result.text or "12" in result.text, result.text


@pytest.mark.parametrize(("details", "refused"), [
    ("(a)-[anon_0*..30]-(b)", True),
    ("(a)-[anon_0*]-(b)", True),
    ("(a)-[anon_0*5..]-(b)", True),
    ("(a) ((x)-[]->(y)){1, 30} (b)", True),
    ("(a) ((x)-[]->(y))+ (b)", True),
    ("(a)-[anon_0:R*2]->(b)", False),
    ("(a)-[anon_0*1..4]-(b)", False),
    ("(a)-[anon_0*..3]-(b) WHERE a.x * b.y > 2", False),
    ("(a) ((x)-[]->(y)){2} (b)", False),
])
def test_the_hop_cap_reads_what_the_server_planned(details, refused):
    from pytest_beam.memory.cypher_tool import refusal

    reason = refusal([("ProduceResults", "n"), ("VarLengthExpand(All)", details), ("AllNodesScan", "a")])
    assert (reason is not None) is refused, reason
    assert refusal([("LoadCSV", "row")]).startswith("LOAD CSV")


@pytest.mark.parametrize("query", [
    "WITH [x IN range(1,40000000) | x] AS l RETURN size(l)",
    "WITH [x IN RaNgE/**/(1, 4*10000000) | x] AS l RETURN size(l)",
    "UNWIND range(1, 40000000) AS x WITH collect(x) AS l RETURN size(l)",
    "WITH 40000000 AS k RETURN size([x IN range(1, k) | x]) AS n",
])
def test_range_is_refused_by_plan_and_the_server_lives(guarded, query):
    """The issue's query: on an idle machine it failed with the heap's OutOfMemoryError and the
    server lived; on a loaded one (a full run under -n 5) the error hit the Bolt event loop and
    the conversation's server stopped answering. It never runs now."""
    from pytest_beam.memory.tool_specs import ToolLimits
    from pytest_beam.memory.tools import ToolBox
    from pytest_beam.services import ReadLimits

    service, driver, database = guarded
    before = _count(driver, database)
    box = ToolBox(driver, database, None, ToolLimits(reads=ReadLimits(timeout_s=30.0, max_rows=100)))
    result = box.call("cypher", {"query": query})
    assert result.is_error and "range() is not allowed here" in result.text, result.text
    assert service.is_alive() and _count(driver, database) == before


@pytest.fixture
def held_write(guarded) -> Iterator[tuple[Any, str]]:
    """Another session's write transaction, open and uncommitted: (its transaction, its id)."""
    import neo4j

    _, driver, database = guarded
    session = driver.session(database=database, default_access_mode=neo4j.WRITE_ACCESS)
    tx = session.begin_transaction(metadata={"owner": "another-user"})
    tx.run("CREATE (:Held {k: 1})").consume()
    rows = driver.execute_query("SHOW TRANSACTIONS YIELD transactionId, metaData "
                                "WHERE metaData.owner = 'another-user' RETURN transactionId",
                                database_=database).records
    assert len(rows) == 1, rows
    try:
        yield tx, rows[0]["transactionId"]
    finally:
        if not tx.closed():
            tx.rollback()
        session.close()
        driver.execute_query("MATCH (h:Held) DETACH DELETE h", database_=database)


def test_the_agent_cannot_terminate_another_sessions_write(guarded, held_write):
    """Issue 32 item 1: TERMINATE TRANSACTIONS plans as a read (query_type 'r'), so the READ
    transaction let it through and the other session's commit failed with
    Neo.ClientError.Transaction.Terminated. Refused by plan now; the held write commits."""
    from pytest_beam.memory.tools import ToolBox

    _, driver, database = guarded
    tx, tx_id = held_write
    box = ToolBox(driver, database, None)
    for query in (f"TERMINATE TRANSACTIONS '{tx_id}'",
                  f"terminate /* who? */ transaction \"{tx_id}\" YIELD message RETURN message"):
        result = box.call("cypher", {"query": query})
        assert result.is_error and "not allowed here" in result.text, result.text
    tx.commit()
    assert run_read(driver, database, "MATCH (h:Held) RETURN count(h) AS n", {})[0]["n"] == 1


@pytest.mark.parametrize("query", [
    "SHOW TRANSACTIONS",
    "/* list */ show\ntransactions YIELD transactionId, currentQuery RETURN *",
    "SHOW TRANSACTIONS YIELD transactionId WHERE transactionId <> '' RETURN transactionId",
    "CALL db.clearQueryCaches()",
    "call db.clearQueryCaches() YIELD value RETURN value",
    "CALL () { CALL db.clearQueryCaches() YIELD value RETURN value } RETURN value",
    "CALL dbms.listConfig() YIELD name, value RETURN name, value",
    "CALL db.awaitIndexes(1)",
    "SHOW DATABASES",
    "SHOW SETTINGS",
])
def test_commands_and_procedures_are_refused_by_plan(guarded, query):
    from pytest_beam.memory.tools import ToolBox

    _, driver, database = guarded
    result = ToolBox(driver, database, None).call("cypher", {"query": query})
    assert result.is_error and "not allowed here" in result.text, result.text


@pytest.mark.parametrize("query", [
    "MATCH (n:N) RETURN count(n) AS n",
    "CALL db.labels() YIELD label RETURN label",
    "CALL () { MATCH (n:N) RETURN n.i AS i } RETURN max(i) AS n",
])
def test_plain_reads_still_run(guarded, query):
    from pytest_beam.memory.tools import ToolBox

    _, driver, database = guarded
    result = ToolBox(driver, database, None).call("cypher", {"query": query})
    assert not result.is_error, result.text

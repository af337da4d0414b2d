"""A conversation's server dies while the agent reads: every tool raises the product's
Neo4jServiceDown naming the conversation (issue 15, point 6), not a raw driver error."""

from __future__ import annotations

import os
import signal
import time

import pytest

from pytest_beam.services import Neo4jServiceDown, open_driver

pytestmark = pytest.mark.neo4j


@pytest.mark.slow  # starts a JVM (or a run) of its own
def test_a_killed_server_during_agent_reads_raises_service_down_naming_the_conversation(tmp_path):
    from pytest_beam.memory.graph_schema import install_schema
    from pytest_beam.memory.tools import ToolBox
    from pytest_beam.services.local import LocalNeo4jProvider

    why = LocalNeo4jProvider.unavailable_reason()
    if why:
        pytest.skip(f"local Neo4j provider unavailable: {why}")
    service = LocalNeo4jProvider(work_dir=tmp_path, heap="256m").create("conv9")
    conn = service.start()
    driver = open_driver(conn, retry_time_s=1.0)
    try:
        install_schema(driver, conn.database, 4)
        driver.execute_query("CREATE (:Message:Searchable {id: 1, role: 'user', text: 'visa delay', order: 1})",
                             database_=conn.database)
        box = ToolBox(driver, conn.database, None)
        assert not box.call("hybrid_search", {"query": "visa"}).is_error
        os.kill(service.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while service.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        for name, args in [("hybrid_search", {"query": "visa"}), ("entity_statements", {"name": "Lisbon"}),
                           ("read_messages", {"ids": [1]}), ("cypher", {"query": "RETURN 1 AS x"})]:
            with pytest.raises(Neo4jServiceDown) as err:
                box.call(name, args)
            assert err.value.label == "conv9" and "conv9" in str(err.value), name
    finally:
        driver.close()
        service.stop()

"""Neo4j services: one graph per conversation, from Docker, a local JVM or an existing server.

>>> provider = select_provider("auto")          # or "docker", "local", "bolt://host:7687"
>>> service = provider.create("conv17")
>>> conn = service.start()                      # Neo4jConnection(uri, user, password, database)
>>> driver = open_driver(conn); rows = run_read(driver, conn.database, "RETURN 1 AS x", {})
>>> service.stop()
"""

from ._process import pid_exists
from .access import (
    AGENT_READS,
    UNBOUNDED,
    ReadLimits,
    ReadResult,
    WriteResult,
    connection_of,
    open_driver,
    run_autocommit,
    run_read,
    run_write,
)
from .base import Neo4jConnection, Neo4jProvider, Neo4jService, Neo4jServiceDown, Neo4jServiceError
from .local_install import NEO4J_VERSION
from .selection import select_provider

__all__ = [
    "AGENT_READS",
    "UNBOUNDED",
    "ReadLimits",
    "run_autocommit",
    "NEO4J_VERSION",
    "Neo4jConnection",
    "Neo4jProvider",
    "Neo4jService",
    "Neo4jServiceDown",
    "Neo4jServiceError",
    "ReadResult",
    "WriteResult",
    "connection_of",
    "open_driver",
    "pid_exists",
    "run_read",
    "run_write",
    "select_provider",
]

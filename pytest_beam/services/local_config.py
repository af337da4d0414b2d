"""What a local Neo4j server runs with: its JVM options, its ``neo4j.conf`` and its first password.

A throw-away server per conversation, bound to loopback, auth on, HTTP off, no usage report.
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path

MAIN_CLASS = "org.neo4j.server.CommunityEntryPoint"

JVM_OPTIONS: tuple[str, ...] = (
    # what Neo4j's own launcher sets (server.jvm.additional in the shipped neo4j.conf) ...
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    # ... plus a stable encoding. No -XX:+ExitOnOutOfMemoryError: one read-only query of the
    # agent (a list comprehension over range(1, 40000000), which Neo4j's memory tracking does not
    # see) filled the heap and so ended the conversation's server. Without it Neo4j fails that
    # query with Neo.TransientError.General.OutOfMemoryError and serves the next one; the
    # tracked allocations stop earlier, at db.memory.transaction.max (server_settings).
    # C1 only: a per-conversation server lives minutes, C2 compilation never pays back. On a
    # loaded 2-core machine this halved start-up (~20 s -> ~8-17 s) and the 10k-node MERGE got
    # faster too (bench/neo4j_services.py). Pass jvm_options=("-XX:TieredStopAtLevel=4",) to undo.
    "-XX:TieredStopAtLevel=1",
    "-Dfile.encoding=UTF-8",
)


def heap_bytes(heap: str) -> int:
    """``-Xmx``-style size ("512m", "1g", "1048576") in bytes."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    text = heap.strip().lower()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def transaction_memory(heap: str) -> tuple[str, str]:
    """(per transaction, all transactions) memory caps for a server with this heap: a quarter
    and a half of it, so one runaway query fails with a memory error long before the heap is
    full and the server's own work (ingest, the other tools) still has room."""
    mib = max(1, heap_bytes(heap) >> 20)
    return f"{max(8, mib // 4)}m", f"{max(16, mib // 2)}m"


def server_settings(home: Path, port: int, pagecache: str, heap: str = "512m") -> dict[str, str]:
    """The ``neo4j.conf`` of a server living in ``home`` and listening on 127.0.0.1:``port``."""
    h = home
    per_transaction, all_transactions = transaction_memory(heap)
    return {
        "server.default_listen_address": "127.0.0.1",
        "server.default_advertised_address": "127.0.0.1",
        "server.bolt.enabled": "true",
        "server.bolt.listen_address": f"127.0.0.1:{port}",
        "server.bolt.advertised_address": f"127.0.0.1:{port}",
        "server.http.enabled": "false",
        "server.https.enabled": "false",
        "dbms.security.auth_enabled": "true",
        "dbms.usage_report.enabled": "false",
        "server.directories.data": str(h / "data"),
        "server.directories.logs": str(h / "logs"),
        "server.directories.run": str(h / "run"),
        "server.directories.plugins": str(h / "plugins"),
        "server.directories.import": str(h / "import"),
        "server.memory.pagecache.size": pagecache,
        # a throw-away graph: no 256 MB preallocated transaction log per database
        "db.tx_log.preallocate": "false",
        "db.tx_log.rotation.retention_policy": "2 files",
        "db.logs.query.enabled": "OFF",
        # Bolt's Netty otherwise idles 2 x 5 s before exiting on SIGTERM
        "internal.dbms.bolt.netty_server_shutdown_quiet_period": "0",
        "internal.dbms.bolt.netty_server_shutdown_timeout": "2s",
        # unknown (internal) names must not stop a NEO4J_HOME of another 5.x patch
        "server.config.strict_validation.enabled": "false",
        # the agent's Cypher is model-controlled: no LOAD CSV from files, and none from any
        # address (every IPv4 and IPv6 range blocked), so no query makes the server fetch a URL
        "dbms.security.allow_csv_import_from_file_urls": "false",
        "internal.dbms.cypher_ip_blocklist": "0.0.0.0/0,::/0",
        # a query that wants more memory fails on its own; the server and the graph live on
        "db.memory.transaction.max": per_transaction,
        "db.memory.transaction.total.max": all_transactions,
    }


def auth_ini_line(user: str, password: str, *, salt: bytes | None = None, iterations: int = 1024) -> str:
    """The ``data/dbms/auth.ini`` line ``neo4j-admin dbms set-initial-password`` writes.

    Format ``user:SHA-256,<hash>,<salt>,<iterations>:`` where hash = SHA-256(salt + password)
    iterated (the empty last field: no password change required). The server reads the file when
    it creates the system database on its first start. A unit test checks this against the
    admin tool's own output."""
    salt = secrets.token_bytes(32) if salt is None else salt
    digest = hashlib.sha256(salt + password.encode("utf-8")).digest()
    for _ in range(iterations - 1):
        digest = hashlib.sha256(digest).digest()
    return f"{user}:SHA-256,{digest.hex()},{salt.hex()},{iterations}:"

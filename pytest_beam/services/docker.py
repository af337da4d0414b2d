"""The ``docker`` provider: a pinned ``neo4j:5.26.x`` image through testcontainers.

testcontainers is imported lazily (it is an optional dependency: ``pip install
pytest-beam[docker]``). With no Docker engine, testcontainers' constructor raises
``docker.errors.DockerException`` within a second; :func:`docker_engine_error` turns that into
the signal ``auto`` uses to fall back to the local provider.
"""

from __future__ import annotations

import secrets
from typing import Any

from .base import Neo4jConnection, Neo4jProvider, Neo4jService, Neo4jServiceError
from .local_config import transaction_memory
from .local_install import FIX_HINT, NEO4J_VERSION

IMAGE = f"neo4j:{NEO4J_VERSION}"
"""Pinned image, same patch as the local provider's jars."""


def _container_class() -> Any:
    try:
        from testcontainers.community.neo4j import Neo4jContainer  # testcontainers >= 4.10
    except ImportError:
        try:
            from testcontainers.neo4j import Neo4jContainer  # older layout (now a deprecated shim)
        except ImportError:
            raise Neo4jServiceError(
                "The docker Neo4j provider needs testcontainers: pip install 'pytest-beam[docker]' "
                "(or testcontainers>=4.9). " + FIX_HINT
            ) from None
    return Neo4jContainer


def docker_engine_error(timeout_s: float = 3.0) -> str | None:
    """None when a Docker engine answers a ping, else why not (one line).

    This is the probe ``auto`` uses; unit tests patch it rather than Neo4j."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        return "the `docker` Python package is not installed (pip install 'pytest-beam[docker]')"
    try:
        client = docker.from_env(timeout=int(max(1, timeout_s)))
        try:
            client.ping()
        finally:
            client.close()
    except DockerException as exc:
        return f"no Docker engine answers ({type(exc).__name__}: {str(exc)[:200]})"
    except Exception as exc:  # noqa: BLE001 - requests/urllib3 errors from a half-up engine
        return f"the Docker engine did not answer ({type(exc).__name__}: {str(exc)[:200]})"
    return None


class DockerNeo4jProvider(Neo4jProvider):
    name = "docker"

    def __init__(
        self,
        *,
        image: str = IMAGE,
        start_timeout_s: float = 120.0,
        heap: str = "512m",
        pagecache: str = "64m",
    ) -> None:
        self.image = image
        self.start_timeout_s = start_timeout_s
        self.heap = heap
        self.pagecache = pagecache

    def describe(self) -> str:
        return f"docker ({self.image} through testcontainers, heap {self.heap})"

    def create(self, label: str) -> DockerNeo4jService:
        return DockerNeo4jService(self, label)


class DockerNeo4jService(Neo4jService):
    def __init__(self, provider: DockerNeo4jProvider, label: str) -> None:
        super().__init__(label)
        self.provider = provider
        self.container: Any = None

    def start(self) -> Neo4jConnection:
        with self._lock:
            if self._connection is not None:
                return self._connection
            cls = _container_class()
            from docker.errors import DockerException
            password = secrets.token_urlsafe(24)
            try:
                container = cls(image=self.provider.image, password=password)
            except DockerException as exc:
                raise Neo4jServiceError(
                    f"The docker Neo4j provider cannot reach a Docker engine ({exc}). " + FIX_HINT,
                    label=self.label,
                ) from None
            loopback = _engine_is_local()
            if loopback:  # publish Bolt on 127.0.0.1 only (default: every interface)
                container.ports["7687"] = ("127.0.0.1", None)
            container.with_env("NEO4J_server_memory_heap_max__size", self.provider.heap)
            container.with_env("NEO4J_server_memory_heap_initial__size", "64m")
            container.with_env("NEO4J_server_memory_pagecache_size", self.provider.pagecache)
            container.with_env("NEO4J_dbms_usage__report_enabled", "false")
            # the same guards as the local server (local_config.server_settings): no LOAD CSV from
            # files or any address, and a memory cap per transaction
            per_transaction, all_transactions = transaction_memory(self.provider.heap)
            container.with_env("NEO4J_dbms_security_allow__csv__import__from__file__urls", "false")
            container.with_env("NEO4J_internal_dbms_cypher__ip__blocklist", "0.0.0.0/0,::/0")
            container.with_env("NEO4J_db_memory_transaction_max", per_transaction)
            container.with_env("NEO4J_db_memory_transaction_total_max", all_transactions)
            self.container = container
            try:
                _with_startup_timeout(self.provider.start_timeout_s, container.start)
            except Exception as exc:
                tail = self.log_tail(40)
                self.stop()
                raise Neo4jServiceError(
                    f"Neo4j container {self.provider.image} for {self.label!r} failed to start: "
                    f"{type(exc).__name__}: {exc}\n--- container log tail ---\n{tail}",
                    label=self.label,
                ) from None
            host = "127.0.0.1" if loopback else container.get_container_host_ip()
            port = container.get_exposed_port(7687)
            self._connection = Neo4jConnection(
                uri=f"bolt://{host}:{port}",
                user="neo4j",
                password=password,
                database="neo4j",
                label=self.label,
            )
            return self._connection

    def stop(self) -> None:
        with self._lock:
            container, self.container = self.container, None
            self._connection = None
            if container is not None:
                try:
                    container.stop()
                except Exception:  # noqa: BLE001 - already gone
                    pass

    def is_alive(self) -> bool:
        if self.container is None:
            return False
        try:
            wrapped = self.container.get_wrapped_container()
            wrapped.reload()
            return wrapped.status == "running"
        except Exception:  # noqa: BLE001
            return False

    def log_tail(self, lines: int = 50) -> str:
        if self.container is None:
            return ""
        try:
            out, err = self.container.get_logs()
            text = (out or b"").decode("utf-8", "replace") + (err or b"").decode("utf-8", "replace")
            return "\n".join(text.rstrip().splitlines()[-lines:])
        except Exception:  # noqa: BLE001
            return ""


def _engine_is_local() -> bool:
    """True when the Docker engine runs on this machine (a unix socket), so a port published on
    127.0.0.1 is reachable from here."""
    import os

    host = os.environ.get("DOCKER_HOST", "")
    return host == "" or host.startswith(("unix://", "npipe://"))


def _with_startup_timeout(timeout_s: float, start: Any) -> None:
    """Run ``start`` with testcontainers' start-up timeout (max_tries x sleep_time) ~ ``timeout_s``."""
    from testcontainers.core.config import testcontainers_config as cfg

    old = getattr(cfg, "max_tries", None)
    sleep = getattr(cfg, "sleep_time", 0) or 1
    try:
        if old is not None:
            cfg.max_tries = max(1, int(timeout_s / sleep))
        start()
    finally:
        if old is not None:
            cfg.max_tries = old

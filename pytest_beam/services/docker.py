"""The ``docker`` provider: a pinned ``neo4j:5.26.x`` image through testcontainers.

testcontainers is imported lazily (it is an optional dependency: ``pip install
pytest-beam[docker]``). With no Docker engine, testcontainers' constructor raises
``docker.errors.DockerException`` within a second; :func:`docker_engine_error` turns that into
the signal ``auto`` uses to fall back to the local provider, and :func:`image_unavailable_reason`
the same when the engine answers but the pinned image is neither there nor pullable.

No reaper (``testcontainers/ryuk``) is needed: our containers carry owner labels and are removed
by us (:mod:`pytest_beam.services.docker_cleanup`). Bolt is published on the address
testcontainers itself will connect to (:func:`publish_address`), so its readiness check and our
driver reach the container with no ``TESTCONTAINERS_CONNECTION_MODE`` set by the user.
"""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import Sequence
from typing import Any

from . import docker_cleanup
from .base import Neo4jConnection, Neo4jProvider, Neo4jService, Neo4jServiceError
from .local_config import transaction_memory
from .local_install import FIX_HINT, NEO4J_VERSION
from .procedures import require_procedures

IMAGE = f"neo4j:{NEO4J_VERSION}"
"""Pinned image, same patch as the local provider's jars (built here by .ci/neo4j-image.sh)."""

LOCALHOSTS = ("localhost", "127.0.0.1", "::1")


def _container_class() -> Any:
    try:  # testcontainers >= 4.10
        from testcontainers.community.neo4j import Neo4jContainer
    except ImportError:
        try:  # the older layout (now a deprecated shim)
            from testcontainers.neo4j import Neo4jContainer
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


def image_unavailable_reason(image: str = IMAGE, timeout_s: float = 10.0) -> str | None:
    """None when the engine has ``image`` or its registry can serve it (asks the registry for the
    manifest only, no download), else why not (one line). Call after :func:`docker_engine_error`."""
    import docker
    from docker.errors import ImageNotFound

    client = docker.from_env(timeout=int(max(1, timeout_s)))
    try:
        try:
            client.images.get(image)
            return None
        except ImageNotFound:
            pass
        try:
            client.api.inspect_distribution(image)
            return None
        except Exception as exc:  # noqa: BLE001 - APIError (no registry, no name lookup), timeouts
            why = str(getattr(exc, "explanation", None) or exc)
            return f"the image {image} is not on this engine and cannot be pulled ({why[:200]})"
    finally:
        client.close()


def _is_local_address(host: str) -> bool:
    """True when ``host`` is an address of this machine (binding a socket to it works)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
        return True
    except OSError:
        return False


def _network_gateway(client: Any, network: str) -> str | None:
    """The gateway of a Docker network: its IPAM ``Gateway``, else (the default bridge of
    dockerd 20.10 lists only the subnet) the subnet's first address, which Docker gives the
    gateway by default. None when unknown."""
    import ipaddress

    try:
        config = client.networks.get(network).attrs["IPAM"]["Config"] or []
    except Exception:  # noqa: BLE001 - no such network, engine trouble
        return None
    for entry in config:
        if entry.get("Gateway"):
            return str(entry["Gateway"])
    for entry in config:
        try:
            subnet = ipaddress.ip_network(entry.get("Subnet", ""), strict=False)
        except ValueError:
            continue
        if subnet.version == 4 and subnet.num_addresses > 2:
            return str(subnet.network_address + 1)
    return None


def publish_address(container: Any) -> str | None:
    """The host address to publish Bolt on, where testcontainers will connect (None: every
    interface, for a remote engine whose own addresses we cannot know).

    testcontainers picks a connection mode: ``docker_host`` (its ``host()``: localhost, or the
    engine's remote name), ``gateway_ip`` (when it believes it runs inside a container — a
    ``/.dockerenv`` file — it connects through the bridge network's gateway, e.g. 172.17.0.1)
    or ``bridge_ip`` (the container's own address and port, no published port used)."""
    from testcontainers.core.config import ConnectionMode

    client = container.get_docker_client()
    mode = client.get_connection_mode()
    local_engine = _engine_is_local()
    if mode == ConnectionMode.bridge_ip:
        return "127.0.0.1"
    if mode == ConnectionMode.gateway_ip:
        network = container._network.name if getattr(container, "_network", None) else "bridge"
        gateway = _network_gateway(client.client, network)
        return gateway if gateway and local_engine and _is_local_address(gateway) else None
    host = client.host()
    if host in LOCALHOSTS:
        return "127.0.0.1"
    return host if local_engine and _is_local_address(host) else None


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
        self.run_id = docker_cleanup.RUN_ID

    def describe(self) -> str:
        return f"docker ({self.image} through testcontainers, heap {self.heap})"

    def create(self, label: str, procedures: Sequence[str] = ()) -> DockerNeo4jService:
        return DockerNeo4jService(self, label, procedures)

    def remove_dead_leftovers(self) -> list[str]:
        """Remove the containers of earlier runs on this host whose owner process is gone
        (after kill -9); done once per process before the first start. Returns their ids."""
        import docker

        client = docker.from_env(timeout=30)
        try:
            return docker_cleanup.remove_dead_leftovers(client)
        finally:
            client.close()


class DockerNeo4jService(Neo4jService):
    def __init__(self, provider: DockerNeo4jProvider, label: str, procedures: Sequence[str] = ()) -> None:
        super().__init__(label)
        self.provider = provider
        self.procedures = tuple(procedures)
        self.container: Any = None
        self.container_id: str | None = None
        self.startup_s: float | None = None
        self.removed_leftovers: list[str] = []

    def start(self) -> Neo4jConnection:
        with self._lock:
            if self._connection is not None:
                return self._connection
            t0 = time.monotonic()
            cls = _container_class()
            from docker.errors import DockerException

            password = secrets.token_urlsafe(24)
            try:
                container = cls(image=self.provider.image, password=password)
                self.removed_leftovers = docker_cleanup.sweep_once(container.get_docker_client().client)
            except DockerException as exc:
                raise Neo4jServiceError(
                    f"The docker Neo4j provider cannot reach a Docker engine ({exc}). " + FIX_HINT,
                    label=self.label,
                ) from None
            address = publish_address(container)  # None: every interface; always a random port
            container.ports["7687"] = (address, None) if address else None
            container.with_kwargs(labels=docker_cleanup.owner_labels(self.label))
            for key, value in self._settings().items():
                container.with_env(key, value)
            self.container = container
            docker_cleanup.register(self)
            try:
                with docker_cleanup.ryuk_off():
                    _with_startup_timeout(self.provider.start_timeout_s, container.start)
                self.container_id = container.get_wrapped_container().short_id
                host = container.get_container_host_ip()
                port = container.get_exposed_port(7687)
            except BaseException as exc:
                tail = self.log_tail(40)
                self.stop()
                if not isinstance(exc, Exception):
                    raise  # KeyboardInterrupt / SystemExit: removed, now let it go on
                raise Neo4jServiceError(
                    f"Neo4j container {self.provider.image} for {self.label!r} failed to start: "
                    f"{type(exc).__name__}: {exc}\n--- container log tail ---\n{tail}",
                    label=self.label,
                ) from None
            self.startup_s = time.monotonic() - t0
            connection = Neo4jConnection(
                uri=f"bolt://{host}:{port}",
                user="neo4j",
                password=password,
                database="neo4j",
                label=self.label,
            )
            try:  # the pinned image holds no plugin: a system that needs one is told so, and nothing is left
                require_procedures(connection, self.procedures, f"the docker image {self.provider.image}")
            except BaseException:
                self.stop()
                raise
            self._connection = connection
            return self._connection

    def _settings(self) -> dict[str, str]:
        """The container's NEO4J_x_y__z settings: the same guards as the local server
        (local_config.server_settings): no LOAD CSV from files or any address, a memory cap per
        transaction, no usage report."""
        per_transaction, all_transactions = transaction_memory(self.provider.heap)
        return {
            "NEO4J_server_memory_heap_max__size": self.provider.heap,
            "NEO4J_server_memory_heap_initial__size": "64m",
            "NEO4J_server_memory_pagecache_size": self.provider.pagecache,
            "NEO4J_dbms_usage__report_enabled": "false",
            "NEO4J_dbms_security_allow__csv__import__from__file__urls": "false",
            "NEO4J_internal_dbms_cypher__ip__blocklist": "0.0.0.0/0,::/0",
            "NEO4J_db_memory_transaction_max": per_transaction,
            "NEO4J_db_memory_transaction_total_max": all_transactions,
        }

    def stop(self) -> None:
        """Remove the container (force, with its volumes). Idempotent."""
        with self._lock:
            container, self.container = self.container, None
            self._connection = None
            if container is not None:
                try:
                    container.stop()  # testcontainers: remove(force=True, v=True)
                except Exception:  # noqa: BLE001, S110 - already gone
                    pass
            docker_cleanup.unregister(self)

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
    one of this machine's addresses is reachable from here."""
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

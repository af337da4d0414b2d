"""``select_provider``: ``auto | docker | local | <bolt URI>`` to a :class:`Neo4jProvider`."""

from __future__ import annotations

import pathlib

from . import docker as _docker
from . import local as _local
from .base import Neo4jProvider, Neo4jServiceError
from .external import ExternalNeo4jProvider, is_bolt_uri
from .local_install import FIX_HINT

SPECS = ("auto", "docker", "local")


def docker_engine_error() -> str | None:
    """The engine probe (None = an engine answers). Tests patch this, not Neo4j."""
    return _docker.docker_engine_error()


def docker_image_error() -> str | None:
    """Why the pinned image cannot be used (None = it is there or can be pulled). Tests patch this."""
    return _docker.image_unavailable_reason()


def local_unavailable_reason() -> str | None:
    """Why the local provider cannot run here (None = it can)."""
    return _local.LocalNeo4jProvider.unavailable_reason()


def select_provider(
    spec: str,
    *,
    work_dir: pathlib.Path | None = None,
    start_timeout_s: float = 120.0,
    heap: str = "512m",
) -> Neo4jProvider:
    """The provider for ``--beam-neo4j``.

    ``auto``: docker when an engine answers and has (or can pull) the pinned image, else local
    when it can run (Java 17+ and the jars, NEO4J_HOME or mvn; its ``selection_note`` then says
    in one line why not docker, when an engine answered), else :class:`Neo4jServiceError`
    listing the three ways to fix it.
    ``docker`` / ``local``: that provider, or an error naming the fix when it cannot run.
    ``bolt://...`` (``neo4j://``, ``bolt+s://``...): an existing server, see
    :mod:`pytest_beam.services.external`.
    """
    spec = (spec or "auto").strip()
    if is_bolt_uri(spec):
        return ExternalNeo4jProvider(spec, timeout_s=start_timeout_s)
    key = spec.lower()
    if key not in SPECS:
        raise Neo4jServiceError(
            f"--beam-neo4j={spec!r} is not one of auto, docker, local or a bolt URI "
            "(bolt://, bolt+s://, neo4j://, neo4j+s://...)."
        )

    def docker_provider() -> Neo4jProvider:
        return _docker.DockerNeo4jProvider(start_timeout_s=start_timeout_s, heap=heap)

    def local_provider() -> Neo4jProvider:
        return _local.LocalNeo4jProvider(work_dir=work_dir, start_timeout_s=start_timeout_s, heap=heap)

    if key == "docker":
        why = docker_engine_error()
        if why:
            raise Neo4jServiceError(
                f"--beam-neo4j=docker: {why}. Start Docker (or set DOCKER_HOST), or choose "
                "--beam-neo4j=local (Java 17 + Maven or NEO4J_HOME) or --beam-neo4j=<bolt URI>."
            )
        why = docker_image_error()
        if why:
            raise Neo4jServiceError(
                f"--beam-neo4j=docker: {why}. Build it locally (.ci/neo4j-image.sh in pytest-beam's "
                "repository) or pull it where a registry is reachable, or choose --beam-neo4j=local "
                "or --beam-neo4j=<bolt URI>."
            )
        return docker_provider()
    if key == "local":
        why = local_unavailable_reason()
        if why:
            raise Neo4jServiceError(f"--beam-neo4j=local cannot run here: {why}. " + FIX_HINT)
        return local_provider()
    # auto
    docker_why = docker_engine_error()
    engine_answers = docker_why is None
    if engine_answers:
        docker_why = docker_image_error()
        if docker_why is None:
            return docker_provider()
    local_why = local_unavailable_reason()
    if local_why is None:
        provider = local_provider()
        if engine_answers:
            provider.selection_note = (
                f"Neo4j: a Docker engine answers but {docker_why}; using the local provider "
                "(--beam-neo4j=local) instead"
            )
        return provider
    raise Neo4jServiceError(
        "No way to run Neo4j here. docker: "
        f"{docker_why}; local: {local_why}.\n"
        "Fix it one of three ways:\n"
        "  1. install and start Docker (testcontainers then runs the pinned neo4j image);\n"
        "  2. let the local provider run Neo4j from jars: Java 17+ (PATH/JAVA_HOME) and Maven "
        "`mvn` to resolve Neo4j 5.26 from Maven Central once (.ci/neo4j-jars.sh), or NEO4J_HOME "
        "pointing at an unpacked Neo4j 5 tarball;\n"
        "  3. pass an existing server: --beam-neo4j=bolt://host:7687 with BEAM_NEO4J_USER / "
        "BEAM_NEO4J_PASSWORD."
    )

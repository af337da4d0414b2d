"""Provider selection and error paths. No Neo4j is started here: the Docker engine probe is
patched (or made to fail for real by pointing DOCKER_HOST at a missing socket), never Neo4j."""

from __future__ import annotations

import os
import subprocess

import pytest

from pytest_beam.services import Neo4jConnection, Neo4jServiceError, select_provider, selection
from pytest_beam.services.docker import IMAGE, DockerNeo4jProvider, docker_engine_error
from pytest_beam.services.external import ExternalNeo4jProvider, database_name_for, is_bolt_uri
from pytest_beam.services.local import LocalNeo4jProvider, auth_ini_line
from pytest_beam.services.local_install import NEO4J_VERSION, resolve_classpath

NO_ENGINE = "unix:///nonexistent/beam-test/docker.sock"


@pytest.fixture
def no_docker_engine(monkeypatch):
    """A real 'no engine' situation, whatever this machine has: the docker SDK gets a socket
    that does not exist and raises DockerException, as it does where Docker is not installed."""
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)


def test_auto_takes_docker_when_an_engine_answers(monkeypatch):
    monkeypatch.setattr(selection, "docker_engine_error", lambda: None)
    monkeypatch.setattr(selection, "docker_image_error", lambda: None)
    monkeypatch.setattr(selection, "local_unavailable_reason", lambda: pytest.fail("local probed"))
    provider = select_provider("auto", heap="256m", start_timeout_s=33)
    assert isinstance(provider, DockerNeo4jProvider) and provider.name == "docker"
    assert provider.image == IMAGE == f"neo4j:{NEO4J_VERSION}"
    assert provider.heap == "256m" and provider.start_timeout_s == 33
    assert isinstance(select_provider("docker"), DockerNeo4jProvider)


def test_no_engine_raises_docker_exception_and_auto_falls_back_to_local(no_docker_engine, monkeypatch, tmp_path):
    import docker
    from docker.errors import DockerException

    with pytest.raises(DockerException):
        docker.from_env()
    why = docker_engine_error()
    assert why is not None and "DockerException" in why
    monkeypatch.setattr(selection, "local_unavailable_reason", lambda: None)
    provider = select_provider("AUTO", work_dir=tmp_path, heap="300m")
    assert isinstance(provider, LocalNeo4jProvider) and provider.name == "local"
    assert provider.work_dir == tmp_path and provider.heap == "300m"


def test_auto_falls_back_to_local_in_one_line_when_the_engine_lacks_the_image(monkeypatch, tmp_path):
    why = f"the image {IMAGE} is not on this engine and cannot be pulled (no such host)"
    monkeypatch.setattr(selection, "docker_engine_error", lambda: None)
    monkeypatch.setattr(selection, "docker_image_error", lambda: why)
    monkeypatch.setattr(selection, "local_unavailable_reason", lambda: None)
    provider = select_provider("auto", work_dir=tmp_path)
    assert isinstance(provider, LocalNeo4jProvider)
    assert provider.selection_note == (
        f"Neo4j: a Docker engine answers but {why}; using the local provider (--beam-neo4j=local) instead")
    assert "\n" not in provider.selection_note
    with pytest.raises(Neo4jServiceError) as err:  # asked for docker explicitly: say how to get the image
        select_provider("docker")
    assert str(err.value).startswith(f"--beam-neo4j=docker: {why}. Build it locally (.ci/neo4j-image.sh")


def test_no_engine_means_no_selection_note(no_docker_engine, monkeypatch, tmp_path):
    monkeypatch.setattr(selection, "local_unavailable_reason", lambda: None)
    monkeypatch.setattr(selection, "docker_image_error", lambda: pytest.fail("image probed without an engine"))
    assert select_provider("auto", work_dir=tmp_path).selection_note is None


def test_testcontainers_constructor_failure_becomes_a_clear_error(no_docker_engine):
    service = DockerNeo4jProvider().create("conv3")
    with pytest.raises(Neo4jServiceError) as err:
        service.start()
    assert err.value.label == "conv3"
    assert "Docker engine" in str(err.value) and "bolt://" in str(err.value)
    assert service.is_alive() is False
    service.stop()  # harmless


def test_explicit_docker_without_engine_names_the_fix(no_docker_engine):
    with pytest.raises(Neo4jServiceError) as err:
        select_provider("docker")
    msg = str(err.value)
    assert msg.startswith("--beam-neo4j=docker: no Docker engine answers")
    assert "Start Docker" in msg and "--beam-neo4j=local" in msg and "bolt URI" in msg


def test_auto_with_nothing_lists_three_fixes(monkeypatch):
    monkeypatch.setattr(selection, "docker_engine_error", lambda: "no Docker engine answers (test)")
    monkeypatch.setattr(selection, "local_unavailable_reason", lambda: "no `java` found (test)")
    with pytest.raises(Neo4jServiceError) as err:
        select_provider("auto")
    msg = str(err.value)
    assert "no Docker engine answers (test)" in msg and "no `java` found (test)" in msg
    assert "1. install and start Docker" in msg
    assert "2. let the local provider" in msg and "Maven" in msg and "NEO4J_HOME" in msg
    assert "3. pass an existing server: --beam-neo4j=bolt://" in msg


def test_local_unavailable_reasons(monkeypatch, tmp_path):
    monkeypatch.setenv("BEAM_JAVA", str(tmp_path / "no-java"))
    assert "no `java`" in LocalNeo4jProvider.unavailable_reason()
    with pytest.raises(Neo4jServiceError, match="cannot run here: no `java`"):
        select_provider("local")

    fake_java = tmp_path / "java"
    fake_java.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    fake_java.chmod(0o755)
    monkeypatch.setenv("BEAM_JAVA", str(fake_java))
    assert "Java 11" in LocalNeo4jProvider.unavailable_reason()


def test_local_without_jars_and_without_maven(monkeypatch, tmp_path):
    java = LocalNeo4jProvider.unavailable_reason() is None or pytest.skip("no java here")
    assert java
    monkeypatch.delenv("NEO4J_HOME", raising=False)
    monkeypatch.delenv("BEAM_MVN", raising=False)
    monkeypatch.setenv("BEAM_CACHE_DIR", str(tmp_path / "cache"))  # no cached class path
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn (java comes from BEAM_JAVA/JAVA_HOME)
    monkeypatch.setenv("BEAM_JAVA", "/usr/bin/java" if os.path.exists("/usr/bin/java") else "java")
    reason = LocalNeo4jProvider.unavailable_reason()
    assert reason == "no NEO4J_HOME, no cached Neo4j class path and no `mvn` to resolve the jars"
    with pytest.raises(Neo4jServiceError, match="`mvn` is not on PATH") as err:
        resolve_classpath()
    assert "NEO4J_HOME" in str(err.value) and "bolt://" in str(err.value)


def test_neo4j_home_is_used_and_checked(monkeypatch, tmp_path):
    monkeypatch.setenv("NEO4J_HOME", str(tmp_path))
    with pytest.raises(Neo4jServiceError, match=r"has no lib/\*.jar"):
        resolve_classpath()
    (tmp_path / "lib").mkdir()
    for name in ("neo4j-server-5.26.30.jar", "a.jar"):
        (tmp_path / "lib" / name).write_bytes(b"")
    assert resolve_classpath() == [str(tmp_path / "lib" / "a.jar"), str(tmp_path / "lib" / "neo4j-server-5.26.30.jar")]


def test_bolt_uris_select_the_external_provider(monkeypatch):
    monkeypatch.setenv("BEAM_NEO4J_USER", "alice")
    monkeypatch.setenv("BEAM_NEO4J_PASSWORD", "s3cr3t-pw")
    for uri in ("bolt://db.example:7687", "neo4j+s://x.databases.neo4j.io", "bolt+ssc://10.0.0.1"):
        provider = select_provider(uri)
        assert isinstance(provider, ExternalNeo4jProvider) and provider.name == "external"
        assert provider.user == "alice" and provider.password == "s3cr3t-pw"
        assert "s3cr3t-pw" not in repr(provider) and "s3cr3t-pw" not in provider.describe()
    monkeypatch.delenv("BEAM_NEO4J_PASSWORD")
    with pytest.raises(Neo4jServiceError, match="BEAM_NEO4J_PASSWORD"):
        select_provider("bolt://db.example:7687")
    assert not is_bolt_uri("http://db.example:7474") and not is_bolt_uri("bolt")
    with pytest.raises(Neo4jServiceError, match="not one of auto, docker, local"):
        select_provider("postgres://x")


def test_database_names_follow_neo4j_rules():
    assert database_name_for("conv17") == "beam-conv17"
    assert database_name_for("Conv_17 (long)") == "beam-conv-17-long"
    assert len(database_name_for("x" * 200)) == 63


def test_connection_repr_hides_password():
    conn = Neo4jConnection("bolt://127.0.0.1:1", "neo4j", "hunter2-secret", "neo4j", label="conv1")
    assert "hunter2-secret" not in repr(conn) and "hunter2-secret" not in str(conn)
    assert conn.auth == ("neo4j", "hunter2-secret")


@pytest.mark.neo4j
def test_auth_ini_matches_neo4j_admin(tmp_path):
    """Our initial-password line is byte-for-byte what `neo4j-admin dbms set-initial-password`
    writes for the same salt (runs the real admin tool from the resolved jars)."""
    if LocalNeo4jProvider.unavailable_reason():
        pytest.skip(LocalNeo4jProvider.unavailable_reason())
    provider = LocalNeo4jProvider()
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "neo4j.conf").write_text(f"server.directories.data={tmp_path / 'data'}\n")
    env = dict(os.environ, NEO4J_HOME=str(tmp_path), NEO4J_CONF=str(tmp_path / "conf"))
    out = subprocess.run(
        [provider.java_binary(), "-cp", os.pathsep.join(provider.classpath()), "org.neo4j.cli.AdminTool",
         "dbms", "set-initial-password", "pässword-42"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "Changed password for user 'neo4j'" in out.stdout + out.stderr
    theirs = (tmp_path / "data" / "dbms" / "auth.ini").read_text().strip()
    salt = bytes.fromhex(theirs.split(",")[2])
    assert auth_ini_line("neo4j", "pässword-42", salt=salt) == theirs
    assert auth_ini_line("neo4j", "other", salt=salt) != theirs

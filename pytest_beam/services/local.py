"""The ``local`` provider: a Neo4j 5.26 Community server as a child JVM process, no Docker.

Finding Java and the jars is :mod:`pytest_beam.services.local_install`. Each service gets its
own temporary home (config, data, logs), a free loopback port, auth on with a random password
(written as the initial password before the first start, exactly as
``neo4j-admin dbms set-initial-password`` does), HTTP off and usage reports off. Readiness is a
real Bolt ``RETURN 1`` (:mod:`pytest_beam.services.local_readiness`). See
:mod:`pytest_beam.services._process` for why no JVM outlives us.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import disk_full, disk_full_text, file_lock
from . import _process
from .base import Neo4jConnection, Neo4jProvider, Neo4jService, Neo4jServiceError
from .local_config import JVM_OPTIONS, MAIN_CLASS, auth_ini_line, server_settings
from .local_install import (
    FIX_HINT,
    MIN_JAVA,
    NEO4J_VERSION,
    cache_dir,
    cached_classpath,
    classpath_file,
    find_java,
    java_major_version,
    neo4j_home_jars,
    resolve_classpath,
    tail_text,
)
from .local_readiness import DISK_HINT, PortTaken, server_log_tail, wait_ready
from .procedures import allowlist, apoc_jar, needs_apoc, require_procedures, unknown_procedures

if TYPE_CHECKING:
    from .jvm_startup import ClassDataArchive

# The jars on Neo4j 5.26.30's class path come to about 128 MB (213 files, measured from a
# resolved classpath.txt); what Maven downloads into ~/.m2 with their poms is a little more.
JARS_MB = 130

# ---- helpers ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- provider and service -----------------------------------------------------------------------


class LocalNeo4jProvider(Neo4jProvider):
    """Neo4j servers as child JVM processes of this Python process."""

    name = "local"

    def __init__(
        self,
        *,
        work_dir: Path | None = None,
        start_timeout_s: float = 120.0,
        heap: str = "512m",
        pagecache: str = "64m",
        version: str = NEO4J_VERSION,
        java: str | None = None,
        jvm_options: tuple[str, ...] = (),
        stop_timeout_s: float = 30.0,
        fast_start: bool = True,
        startup_dir: Path | None = None,
    ) -> None:
        self.work_dir = Path(work_dir) if work_dir else None
        self.start_timeout_s = start_timeout_s
        self.heap = heap
        self.pagecache = pagecache
        self.version = version
        self.java = java
        self.jvm_options = tuple(jvm_options)
        self.stop_timeout_s = stop_timeout_s
        self.fast_start = fast_start  # unsigned jar copies and a class-data archive (jvm_startup.py)
        self.startup_dir = Path(startup_dir) if startup_dir else cache_dir(version)  # where they live
        self._classpath: list[str] | None = None
        self._lock = threading.Lock()

    @staticmethod
    def unavailable_reason(version: str = NEO4J_VERSION) -> str | None:
        """Why this provider cannot run here (None when it can). Cheap: resolves nothing."""
        java = find_java()
        if not java:
            return "no `java` found (PATH, JAVA_HOME or BEAM_JAVA)"
        major = java_major_version(java)
        if major is not None and major < MIN_JAVA:
            return f"{java} is Java {major}; Neo4j 5.26 needs Java {MIN_JAVA} or 21"
        try:
            if neo4j_home_jars() is not None:
                return None
        except Neo4jServiceError as exc:
            return str(exc)
        if cached_classpath(version) is not None:
            return None
        if os.environ.get("BEAM_MVN") or shutil.which("mvn"):
            return None
        return "no NEO4J_HOME, no cached Neo4j class path and no `mvn` to resolve the jars"

    def first_use_note(self) -> str | None:
        """A line to show before a start that must first resolve the jars with Maven (once)."""
        try:
            if neo4j_home_jars() is not None or cached_classpath(self.version) is not None:
                return None
        except Neo4jServiceError:
            return None  # the start itself says what is wrong
        return (f"Neo4j: resolving the Neo4j {self.version} jars with Maven into ~/.m2 (about {JARS_MB} MB, "
                f"once; cached under {classpath_file(self.version).parent})")

    def describe(self) -> str:
        src = "NEO4J_HOME" if os.environ.get("NEO4J_HOME") else "Maven jars"
        return f"local (Neo4j {self.version} Community JVM from {src}, heap {self.heap})"

    def java_binary(self) -> str:
        java = self.java or find_java()
        if not java:
            raise Neo4jServiceError("The local Neo4j provider found no `java`. " + FIX_HINT)
        major = java_major_version(java)
        if major is not None and major < MIN_JAVA:
            raise Neo4jServiceError(
                f"{java} is Java {major}; Neo4j 5.26 needs Java {MIN_JAVA}+ "
                "(set JAVA_HOME or BEAM_JAVA). " + FIX_HINT
            )
        return java

    def classpath(self) -> list[str]:
        with self._lock:
            if self._classpath is None:
                jars = resolve_classpath(self.version)
                if self.fast_start:
                    from .jvm_startup import run_classpath

                    with file_lock(self.startup_dir / ".lock"):
                        jars = run_classpath(jars, self.startup_dir)
                self._classpath = jars
            return self._classpath

    def create(self, label: str, procedures: Sequence[str] = ()) -> LocalNeo4jService:
        return LocalNeo4jService(self, label, procedures)


class LocalNeo4jService(Neo4jService):
    """One Neo4j JVM for one conversation."""

    USER = "neo4j"
    DATABASE = "neo4j"
    PORT_ATTEMPTS = 3

    def __init__(self, provider: LocalNeo4jProvider, label: str, procedures: Sequence[str] = ()) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", label):
            raise ValueError(f"service label must be [A-Za-z0-9_.-]{{1,64}}, got {label!r}")
        if unknown := unknown_procedures(procedures):
            raise Neo4jServiceError(f"no plugin the local provider knows holds {', '.join(unknown)}", label=label)
        super().__init__(label)
        self.provider = provider
        self.procedures = tuple(procedures)
        self.home: Path | None = None
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self.startup_s: float | None = None
        self._final_tail = ""
        self._archive: ClassDataArchive | None = None  # of the running JVM

    # -- paths
    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def data_dir(self) -> Path | None:
        return self.home / "data" if self.home else None

    @property
    def logs_dir(self) -> Path | None:
        return self.home / "logs" if self.home else None

    def __repr__(self) -> str:
        return f"LocalNeo4jService(label={self.label!r}, port={self.port}, pid={self.pid})"

    # -- lifecycle
    def start(self) -> Neo4jConnection:
        with self._lock:
            if self._connection is not None and self.is_alive():
                return self._connection
            t0 = time.monotonic()
            java = self.provider.java_binary()
            classpath = self.provider.classpath()
            plugins = [apoc_jar()] if needs_apoc(self.procedures) else []
            # as Neo4j's own launcher runs a plugin: on the class path (its extension) and in plugins/
            classpath = [*classpath, *map(str, plugins)]
            base = self.provider.work_dir
            if base is not None:
                base.mkdir(parents=True, exist_ok=True)
            password = secrets.token_urlsafe(24)
            try:
                self.home = Path(tempfile.mkdtemp(prefix=f"beam-neo4j-{self.label}-", dir=base))
                for sub in ("conf", "logs", "run", "plugins", "import"):
                    (self.home / sub).mkdir(parents=True, exist_ok=True)
                for jar in plugins:
                    shutil.copy2(jar, self.home / "plugins" / jar.name)
            except OSError as exc:
                raise self._setup_error(exc, base) from None
            _process.register(self)
            try:
                for attempt in range(self.PORT_ATTEMPTS):
                    self._fresh_data(password)
                    self.port = free_port()
                    self._write_conf()
                    self._launch(java, classpath)
                    try:
                        self._wait_ready(password, t0)
                        break
                    except PortTaken:
                        self._kill_quietly()
                        if attempt + 1 == self.PORT_ATTEMPTS:
                            raise self._start_error("the Bolt port was taken on every attempt") from None
            except BaseException:
                self._final_tail = self.log_tail(60)
                self._cleanup()
                raise
            self.startup_s = time.monotonic() - t0
            connection = Neo4jConnection(
                uri=f"bolt://127.0.0.1:{self.port}",
                user=self.USER,
                password=password,
                database=self.DATABASE,
                label=self.label,
            )
            try:
                require_procedures(connection, self.procedures, f"local Neo4j {self.provider.version}")
            except BaseException:
                self.stop()
                raise
            self._connection = connection
            return self._connection

    def _fresh_data(self, password: str) -> None:
        """An empty data folder holding only the initial password file, before every launch: a
        JVM that lost its port to another process (and exited) may have created the system
        database already, so the next launch starts from nothing, as the first did."""
        assert self.home is not None
        data = self.home / "data"
        shutil.rmtree(data, ignore_errors=True)
        try:
            (data / "dbms").mkdir(parents=True, exist_ok=True)
            (data / "dbms" / "auth.ini").write_text(auth_ini_line(self.USER, password) + "\n")
        except OSError as exc:
            raise self._setup_error(exc, self.home) from None

    def _write_conf(self) -> None:
        assert self.home is not None and self.port is not None
        settings = server_settings(self.home, self.port, self.provider.pagecache, self.provider.heap)
        if self.procedures:  # the plugin's procedures the system asked for, and none of its others
            settings["dbms.security.procedures.allowlist"] = allowlist(self.procedures)
        try:
            (self.home / "conf" / "neo4j.conf").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        except OSError as exc:
            raise self._setup_error(exc, self.home) from None

    def _setup_error(self, exc: OSError, where: Path | None) -> Neo4jServiceError:
        """Preparing the server's home failed: a full disk is named as such."""
        place = where if where is not None else Path(tempfile.gettempdir())
        if disk_full(exc):
            what = disk_full_text(place) + DISK_HINT
        else:
            what = f"its home under {place} could not be prepared ({exc.strerror or exc})"
        return Neo4jServiceError(f"Local Neo4j {self.provider.version} for {self.label!r} failed to start: "
                                 f"{what}.", label=self.label)

    def _launch(self, java: str, classpath: list[str]) -> None:
        assert self.home is not None
        p = self.provider
        options = (*JVM_OPTIONS, *p.jvm_options)
        archive_options: tuple[str, ...] = ()
        if p.fast_start:
            from .jvm_startup import class_data_archive

            archive = self._archive = class_data_archive(java, classpath, options, p.startup_dir)
            archive_options = archive.options
        args = [
            java,
            f"-Xmx{p.heap}",
            "-Xms64m",
            *options,
            *archive_options,
            "-cp",
            os.pathsep.join(classpath),
            MAIN_CLASS,
            f"--home-dir={self.home}",
            f"--config-dir={self.home / 'conf'}",
        ]
        env = dict(os.environ)
        env["NEO4J_HOME"] = str(self.home)
        env["NEO4J_CONF"] = str(self.home / "conf")
        env.pop("JAVA_TOOL_OPTIONS", None)
        # the child keeps its own copy of the file descriptor; ours is closed once it is spawned
        console = open(self.home / "logs" / "console.log", "ab")  # noqa: SIM115 -- closed in finally
        try:
            self.process = _process.spawn(
                args,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                cwd=str(self.home),
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            raise Neo4jServiceError(f"could not run {java}: {exc}. " + FIX_HINT, label=self.label) from None
        finally:
            console.close()

    def _wait_ready(self, password: str, t0: float) -> None:
        assert self.process is not None and self.home is not None and self.port is not None
        wait_ready(self.process, self.home, self.port, (self.USER, password), self.DATABASE,
                   deadline=t0 + self.provider.start_timeout_s, timeout_s=self.provider.start_timeout_s,
                   start_error=self._start_error, log_tail=self.log_tail)

    def _start_error(self, what: str) -> Neo4jServiceError:
        return Neo4jServiceError(
            f"Local Neo4j {self.provider.version} for {self.label!r} failed to start: {what}.\n"
            f"home: {self.home}\n--- server log tail ---\n{self.log_tail(40)}",
            label=self.label,
        )

    def _kill_quietly(self) -> None:
        if self.process is not None:
            _process.terminate_group(self.process, timeout_s=0.0)
        self._finish_archive()

    def _finish_archive(self) -> None:
        """The JVM has exited: publish the class archive it wrote, if any."""
        if self._archive is not None:
            self._archive.finish()
            self._archive = None

    def stop(self) -> None:
        with self._lock:
            if self.process is not None:
                _process.terminate_group(self.process, timeout_s=self.provider.stop_timeout_s)
            if self.home is not None:
                self._final_tail = self.log_tail(60)
            self._cleanup()

    def _cleanup(self) -> None:
        if self.process is not None and self.process.poll() is None:
            _process.terminate_group(self.process, timeout_s=0.0)
        self._finish_archive()
        self._connection = None
        _process.unregister(self)
        if self.home is not None and not os.environ.get("BEAM_KEEP_NEO4J_DIRS"):
            shutil.rmtree(self.home, ignore_errors=True)

    def is_alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def rss_bytes(self) -> int:
        return _process.rss_bytes(self.process.pid) if self.is_alive() and self.process else 0

    def log_tail(self, lines: int = 50) -> str:
        if self.home is None or not self.home.exists():
            return tail_text(self._final_tail, lines)
        return server_log_tail(self.home, lines)

"""The ``local`` provider: a Neo4j 5.26 Community server as a child JVM process, no Docker.

Class path, in this order:

1. ``NEO4J_HOME`` set (an unpacked Neo4j 5 tarball): its ``lib/*.jar``;
2. a cached class-path file ``~/.cache/pytest-beam/neo4j-<version>/classpath.txt`` (or under
   ``$XDG_CACHE_HOME``) whose jars all still exist;
3. otherwise ``mvn dependency:build-classpath`` on the packaged ``neo4j_pom.xml`` resolves the
   jars from Maven Central into ``~/.m2`` once (offline first, so a warm ``~/.m2`` needs no
   network) and writes that cache file. ``.ci/neo4j-jars.sh`` does the same ahead of time.

Each service gets its own temporary home (config, data, logs), a free loopback port, auth on
with a random password (written as the initial password before the first start, exactly as
``neo4j-admin dbms set-initial-password`` does), HTTP off and usage reports off. Readiness is a
real Bolt ``RETURN 1``. See :mod:`pytest_beam.services._process` for why no JVM outlives us.

Run ``python -m pytest_beam.services --print`` to resolve (and print) the class path.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.resources
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..files import atomic_write, file_lock
from ..paths import cache_root
from . import _process
from .base import Neo4jConnection, Neo4jProvider, Neo4jService, Neo4jServiceError

NEO4J_VERSION = "5.26.30"
"""The pinned Neo4j patch (newest 5.26 on Maven Central when pinned); the docker image uses it too."""

MAIN_CLASS = "org.neo4j.server.CommunityEntryPoint"
MIN_JAVA = 17

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
    # ... plus: die rather than limp on after an OOM, and a stable encoding
    "-XX:+ExitOnOutOfMemoryError",
    # C1 only: a per-conversation server lives minutes, C2 compilation never pays back. On a
    # loaded 2-core machine this halved start-up (~20 s -> ~8-17 s) and the 10k-node MERGE got
    # faster too (bench/neo4j_services.py). Pass jvm_options=("-XX:TieredStopAtLevel=4",) to undo.
    "-XX:TieredStopAtLevel=1",
    "-Dfile.encoding=UTF-8",
)

FIX_HINT = (
    "Fix it one of three ways: install/start Docker (then --beam-neo4j=docker or auto); "
    "let the local provider run Neo4j from jars (Java 17+ on PATH or JAVA_HOME, plus Maven `mvn` "
    "to resolve the Neo4j 5.26 jars once from Maven Central - see .ci/neo4j-jars.sh - or "
    "NEO4J_HOME pointing at an unpacked Neo4j 5 tarball); or pass an existing server with "
    "--beam-neo4j=bolt://host:7687 (credentials in BEAM_NEO4J_USER / BEAM_NEO4J_PASSWORD)."
)


# ---- Java and class path --------------------------------------------------------------------------


def find_java() -> str | None:
    """``$BEAM_JAVA``, else ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    explicit = os.environ.get("BEAM_JAVA")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    home = os.environ.get("JAVA_HOME")
    if home:
        cand = os.path.join(home, "bin", "java")
        if os.access(cand, os.X_OK):
            return cand
    return shutil.which("java")


_JAVA_VERSIONS: dict[str, int | None] = {}


def java_major_version(java: str) -> int | None:
    """Major version of a ``java`` binary (17, 21, ...), None when it cannot be told."""
    if java not in _JAVA_VERSIONS:
        try:
            out = subprocess.run(
                [java, "-version"], capture_output=True, text=True, timeout=30, check=False
            ).stderr
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
        major = None
        if m:
            major = int(m.group(1))
            if major == 1 and m.group(2):  # "1.8.0_x"
                major = int(m.group(2))
        _JAVA_VERSIONS[java] = major
    return _JAVA_VERSIONS[java]


def cache_dir(version: str = NEO4J_VERSION) -> Path:
    return cache_root() / f"neo4j-{version}"


def classpath_file(version: str = NEO4J_VERSION) -> Path:
    return cache_dir(version) / "classpath.txt"


def neo4j_home_jars() -> list[str] | None:
    """The jars of ``$NEO4J_HOME/lib`` (None when NEO4J_HOME is not set)."""
    home = os.environ.get("NEO4J_HOME")
    if not home:
        return None
    jars = sorted(glob.glob(os.path.join(home, "lib", "*.jar")))
    if not jars:
        raise Neo4jServiceError(
            f"NEO4J_HOME={home!r} has no lib/*.jar: point it at an unpacked Neo4j 5 tarball "
            "(neo4j-community-5.26.x-unix.tar.gz) or unset it to let Maven resolve the jars."
        )
    return jars


def _read_cached(path: Path) -> list[str] | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    jars = [j for j in text.split(os.pathsep) if j]
    if not jars or not all(os.path.isfile(j) for j in jars):
        return None
    if not any(os.path.basename(j).startswith("neo4j-server-") for j in jars):
        return None
    return jars


def cached_classpath(version: str = NEO4J_VERSION) -> list[str] | None:
    """The cached class path when every jar in it still exists, else None."""
    return _read_cached(classpath_file(version))


_RESOLVE_LOCK = threading.Lock()


def resolve_classpath(version: str = NEO4J_VERSION, *, mvn: str | None = None) -> list[str]:
    """The jars to run Neo4j ``version``: NEO4J_HOME, else the cache, else Maven (then cached).

    Safe to call from several threads and several processes (xdist workers) at once."""
    jars = neo4j_home_jars()
    if jars is not None:
        return jars
    jars = cached_classpath(version)
    if jars is not None:
        return jars
    with _RESOLVE_LOCK, file_lock(cache_dir(version) / ".lock"):
        jars = cached_classpath(version)  # another process may have done it meanwhile
        if jars is not None:
            return jars
        return _resolve_with_maven(version, mvn)


def _resolve_with_maven(version: str, mvn: str | None) -> list[str]:
    mvn = mvn or os.environ.get("BEAM_MVN") or shutil.which("mvn")
    if not mvn:
        raise Neo4jServiceError(
            f"The local Neo4j provider needs the Neo4j {version} jars: no NEO4J_HOME is set, "
            f"{classpath_file(version)} is not there (or names jars that are gone) and `mvn` is "
            "not on PATH to resolve them. " + FIX_HINT
        )
    target = classpath_file(version)
    target.parent.mkdir(parents=True, exist_ok=True)
    pom_text = importlib.resources.files("pytest_beam.services").joinpath("neo4j_pom.xml").read_text()
    with tempfile.TemporaryDirectory(prefix="beam-neo4j-pom-") as tmp:
        pom = Path(tmp) / "pom.xml"
        pom.write_text(pom_text)
        out_file = Path(tmp) / "classpath.txt"
        base = [
            mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(pom),
            "dependency:build-classpath",
            f"-Dmdep.outputFile={out_file}", f"-Dneo4j.version={version}",
        ]  # fmt: skip
        outputs = []
        for offline in (True, False):  # a warm ~/.m2 needs no network
            cmd = base[:1] + (["-o"] if offline else []) + base[1:]
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=1800, check=False, cwd=tmp
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                outputs.append(f"{' '.join(cmd)}: {exc}")
                continue
            if proc.returncode == 0 and out_file.is_file():
                jars = _read_cached(out_file)
                if jars:
                    atomic_write(target, os.pathsep.join(jars) + "\n")
                    return jars
            outputs.append(_tail_text(proc.stdout + proc.stderr, 30))
    raise Neo4jServiceError(
        f"Maven could not resolve org.neo4j:neo4j:{version} (is Maven Central reachable, or "
        f"set a mirror in ~/.m2/settings.xml?). Last output:\n{outputs[-1] if outputs else ''}\n"
        + FIX_HINT
    )


# ---- initial password -------------------------------------------------------------------------


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


# ---- helpers ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail_text(text: str, lines: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _tail_file(path: Path, lines: int, max_bytes: int = 256 * 1024) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return _tail_text(data, lines)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


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

    def create(self, label: str) -> LocalNeo4jService:
        return LocalNeo4jService(self, label)


class LocalNeo4jService(Neo4jService):
    """One Neo4j JVM for one conversation."""

    USER = "neo4j"
    DATABASE = "neo4j"
    PORT_ATTEMPTS = 3

    def __init__(self, provider: LocalNeo4jProvider, label: str) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", label):
            raise ValueError(f"service label must be [A-Za-z0-9_.-]{{1,64}}, got {label!r}")
        self.provider = provider
        self.label = label
        self.home: Path | None = None
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self.startup_s: float | None = None
        self._connection: Neo4jConnection | None = None
        self._final_tail = ""
        self._archive = None  # jvm_startup.ClassDataArchive of the running JVM
        self._lock = threading.RLock()

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
            base = self.provider.work_dir
            if base is not None:
                base.mkdir(parents=True, exist_ok=True)
            self.home = Path(tempfile.mkdtemp(prefix=f"beam-neo4j-{self.label}-", dir=base))
            password = secrets.token_urlsafe(24)
            for sub in ("conf", "data/dbms", "logs", "run", "plugins", "import"):
                (self.home / sub).mkdir(parents=True, exist_ok=True)
            (self.home / "data" / "dbms" / "auth.ini").write_text(auth_ini_line(self.USER, password) + "\n")
            _process.register(self)
            try:
                for attempt in range(self.PORT_ATTEMPTS):
                    self.port = free_port()
                    self._write_conf()
                    self._launch(java, classpath)
                    try:
                        self._wait_ready(password, t0)
                        break
                    except _PortTaken:
                        self._kill_quietly()
                        if attempt + 1 == self.PORT_ATTEMPTS:
                            raise self._start_error("the Bolt port was taken on every attempt") from None
            except BaseException:
                self._final_tail = self.log_tail(60)
                self._cleanup()
                raise
            self.startup_s = time.monotonic() - t0
            self._connection = Neo4jConnection(
                uri=f"bolt://127.0.0.1:{self.port}",
                user=self.USER,
                password=password,
                database=self.DATABASE,
                label=self.label,
            )
            return self._connection

    def _write_conf(self) -> None:
        assert self.home is not None
        h = self.home
        settings = {
            "server.default_listen_address": "127.0.0.1",
            "server.default_advertised_address": "127.0.0.1",
            "server.bolt.enabled": "true",
            "server.bolt.listen_address": f"127.0.0.1:{self.port}",
            "server.bolt.advertised_address": f"127.0.0.1:{self.port}",
            "server.http.enabled": "false",
            "server.https.enabled": "false",
            "dbms.security.auth_enabled": "true",
            "dbms.usage_report.enabled": "false",
            "server.directories.data": str(h / "data"),
            "server.directories.logs": str(h / "logs"),
            "server.directories.run": str(h / "run"),
            "server.directories.plugins": str(h / "plugins"),
            "server.directories.import": str(h / "import"),
            "server.memory.pagecache.size": self.provider.pagecache,
            # a throw-away graph: no 256 MB preallocated transaction log per database
            "db.tx_log.preallocate": "false",
            "db.tx_log.rotation.retention_policy": "2 files",
            "db.logs.query.enabled": "OFF",
            # Bolt's Netty otherwise idles 2 x 5 s before exiting on SIGTERM
            "internal.dbms.bolt.netty_server_shutdown_quiet_period": "0",
            "internal.dbms.bolt.netty_server_shutdown_timeout": "2s",
            # unknown (internal) names must not stop a NEO4J_HOME of another 5.x patch
            "server.config.strict_validation.enabled": "false",
        }
        (h / "conf" / "neo4j.conf").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

    def _launch(self, java: str, classpath: list[str]) -> None:
        assert self.home is not None
        p = self.provider
        options = (*JVM_OPTIONS, *p.jvm_options)
        archive_options: tuple[str, ...] = ()
        if p.fast_start:
            from .jvm_startup import class_data_archive

            self._archive = class_data_archive(java, classpath, options, p.startup_dir)
            archive_options = self._archive.options
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
        console = open(self.home / "logs" / "console.log", "ab")
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
        import neo4j
        from neo4j.exceptions import AuthError, Neo4jError, DriverError

        assert self.process is not None and self.port is not None
        deadline = t0 + self.provider.start_timeout_s
        uri = f"bolt://127.0.0.1:{self.port}"
        last_error = "no answer yet"
        while True:
            code = self.process.poll()
            if code is not None:
                tail = self.log_tail(80)
                if "Address already in use" in tail or "BindException" in tail:
                    raise _PortTaken()
                raise self._start_error(f"the JVM exited with code {code} during start")
            if time.monotonic() > deadline:
                raise self._start_error(
                    f"no Bolt answer within {self.provider.start_timeout_s:.0f} s "
                    f"(last: {last_error}); raise the start timeout on a slow machine"
                )
            if _port_open(self.port):
                try:
                    with neo4j.GraphDatabase.driver(
                        uri,
                        auth=(self.USER, password),
                        connection_timeout=5.0,
                        max_transaction_retry_time=0.0,
                        connection_acquisition_timeout=10.0,
                    ) as driver:
                        records, _, _ = driver.execute_query("RETURN 1 AS ok", database_=self.DATABASE)
                        if records and records[0]["ok"] == 1:
                            return
                except AuthError as exc:
                    raise self._start_error(
                        f"the server refused the generated password ({exc.code}); the initial "
                        "password file data/dbms/auth.ini was not taken"
                    ) from None
                except (Neo4jError, DriverError, OSError) as exc:
                    last_error = f"{type(exc).__name__}: {exc}"[:300]
            time.sleep(0.25)

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
            return _tail_text(self._final_tail, lines)
        logs = self.home / "logs"
        parts = []
        for name in ("console.log", "neo4j.log"):
            text = _tail_file(logs / name, lines)
            if text.strip(" \t\r\n\x00\x06"):
                parts.append(f"[{name}]\n{text}")
        errors = [
            ln for ln in _tail_file(logs / "debug.log", 2000).splitlines() if " ERROR " in ln or " WARN " in ln
        ]
        if errors:
            parts.append("[debug.log, WARN/ERROR]\n" + "\n".join(errors[-min(lines, 15):]))
        return "\n".join(parts)


class _PortTaken(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_beam.services [--print]``: resolve (once) and cache the class path."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        jars = resolve_classpath(NEO4J_VERSION)
    except Neo4jServiceError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    if "--print" in argv:
        print(classpath_file() if not os.environ.get("NEO4J_HOME") else os.environ["NEO4J_HOME"])
        print(f"{len(jars)} jars")
    return 0


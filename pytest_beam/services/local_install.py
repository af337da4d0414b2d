"""Finding what a local Neo4j needs: a Java 17+ binary and the Neo4j jars (no server runs here).

Class path, in this order:

1. ``NEO4J_HOME`` set (an unpacked Neo4j 5 tarball): its ``lib/*.jar``;
2. a cached class-path file ``~/.cache/pytest-beam/neo4j-<version>/classpath.txt`` (or under
   ``$XDG_CACHE_HOME``) whose jars all still exist;
3. otherwise ``mvn dependency:build-classpath`` on the packaged ``neo4j_pom.xml`` resolves the
   jars from Maven Central into ``~/.m2`` once (offline first, so a warm ``~/.m2`` needs no
   network) and writes that cache file. ``.ci/neo4j-jars.sh`` does the same ahead of time.

Run ``python -m pytest_beam.services --print`` to resolve (and print) the class path.
"""

from __future__ import annotations

import glob
import importlib.resources
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from ..files import atomic_write, file_lock
from ..paths import cache_root
from .base import Neo4jServiceError

NEO4J_VERSION = "5.26.30"
"""The pinned Neo4j patch (newest 5.26 on Maven Central when pinned); the docker image uses it too."""

MIN_JAVA = 17

FIX_HINT = (
    "Fix it one of three ways: install/start Docker (then --beam-neo4j=docker or auto); "
    "let the local provider run Neo4j from jars (Java 17+ on PATH or JAVA_HOME, plus Maven `mvn` "
    "to resolve the Neo4j 5.26 jars once from Maven Central - see .ci/neo4j-jars.sh - or "
    "NEO4J_HOME pointing at an unpacked Neo4j 5 tarball); or pass an existing server with "
    "--beam-neo4j=bolt://host:7687 (credentials in BEAM_NEO4J_USER / BEAM_NEO4J_PASSWORD)."
)


def tail_text(text: str, lines: int) -> str:
    """The last ``lines`` lines of ``text`` (for error messages quoting a tool's output)."""
    return "\n".join(text.rstrip().splitlines()[-lines:])


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
            outputs.append(tail_text(proc.stdout + proc.stderr, 30))
    raise Neo4jServiceError(
        f"Maven could not resolve org.neo4j:neo4j:{version} (is Maven Central reachable, or "
        f"set a mirror in ~/.m2/settings.xml?). Last output:\n{outputs[-1] if outputs else ''}\n"
        + FIX_HINT
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_beam.services [--print]``: resolve (once) and cache the class path and APOC core."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        jars = resolve_classpath(NEO4J_VERSION)
        from .procedures import apoc_jar

        apoc = apoc_jar()  # the plugin neo4j-graphrag's procedures come from, fetched with the jars
    except Neo4jServiceError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    if "--print" in argv:
        print(classpath_file() if not os.environ.get("NEO4J_HOME") else os.environ["NEO4J_HOME"])
        print(f"{len(jars)} jars; APOC core: {apoc}")
    return 0


"""Procedures beyond Neo4j's own that a system's library calls (neo4j-graphrag calls APOC's).

A system asks for the procedures it needs by name when it starts its graph
(`SystemContext.start_neo4j(procedures=[...])`). The local provider then runs that one server
with the plugin that holds them on its class path and in its plugins folder, and loads only the
procedures asked for (`dbms.security.procedures.allowlist`): the other systems' servers, and the
read-only Cypher of the built-in agent, never see APOC (whose `apoc.load.*` fetch URLs). Every
provider then checks the server really has them, so a docker image or an existing server without
the plugin stops the run with one line naming what is missing, before the library fails on it.

APOC core 5.26.0 is the last 5.26 release published as one self-contained jar (the `core`
classifier; later 5.26 patches ship without their dependencies). It comes from Maven Central
through `mvn`, like the server's jars, once per machine (`.ci/neo4j-jars.sh` does it ahead).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..files import file_lock
from ..paths import cache_root
from .base import Neo4jConnection, Neo4jServiceError

APOC_VERSION = "5.26.0"
APOC_ARTIFACT = f"org.neo4j.procedure:apoc-core:{APOC_VERSION}:jar:core"
APOC_JAR = f"apoc-core-{APOC_VERSION}-core.jar"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"  # the one neo4j_pom.xml uses


def plugin_dir() -> Path:
    return cache_root() / "neo4j-plugins"


def needs_apoc(procedures: Sequence[str]) -> bool:
    return any(p.startswith("apoc.") for p in procedures)


def unknown_procedures(procedures: Sequence[str]) -> list[str]:
    """Names no known plugin provides (Neo4j's own `db.`/`dbms.` ones need no plugin)."""
    return [p for p in procedures if not p.startswith(("apoc.", "db.", "dbms."))]


def cached_apoc_jar() -> Path | None:
    jar = plugin_dir() / APOC_JAR
    return jar if jar.is_file() and jar.stat().st_size > 0 else None


def apoc_jar(mvn: str | None = None) -> Path:
    """APOC core's jar: the cached copy, else fetched once from Maven Central with `mvn`."""
    jar = cached_apoc_jar()
    if jar is not None:
        return jar
    plugin_dir().mkdir(parents=True, exist_ok=True)
    with file_lock(plugin_dir() / ".lock"):
        jar = cached_apoc_jar()
        if jar is not None:
            return jar
        mvn = mvn or os.environ.get("BEAM_MVN") or shutil.which("mvn")
        if not mvn:
            raise Neo4jServiceError(f"APOC core {APOC_VERSION} is not in {plugin_dir()} and `mvn` is not on PATH to "
                                    "fetch it from Maven Central (.ci/neo4j-jars.sh does it ahead of a run)")
        outputs = []
        for offline in (True, False):  # a warm ~/.m2 needs no network
            cmd = [mvn, *(["-o"] if offline else []), "-q", "-B", "-Dstyle.color=never", f"{DEPENDENCY_PLUGIN}:copy",
                   f"-Dartifact={APOC_ARTIFACT}", f"-DoutputDirectory={plugin_dir()}"]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False,
                                      cwd=plugin_dir())
            except (OSError, subprocess.TimeoutExpired) as exc:
                outputs.append(str(exc))
                continue
            jar = cached_apoc_jar()
            if proc.returncode == 0 and jar is not None:
                return jar
            outputs.append("\n".join((proc.stdout + proc.stderr).rstrip().splitlines()[-3:]))
        raise Neo4jServiceError(f"Maven could not fetch {APOC_ARTIFACT} from Maven Central: {outputs[-1]}")


def allowlist(procedures: Sequence[str]) -> str:
    """`dbms.security.procedures.allowlist`: only these plugin procedures load (Neo4j's own always do)."""
    return ",".join(sorted(set(procedures)))


def require_procedures(connection: Neo4jConnection, procedures: Sequence[str], where: str) -> None:
    """Raise one line naming the procedures the started server lacks (none asked: nothing to check)."""
    if not procedures:
        return
    from .access import open_driver, run_autocommit

    driver = open_driver(connection)
    try:
        rows = run_autocommit(driver, connection.database, "SHOW PROCEDURES YIELD name RETURN name")
    finally:
        driver.close()
    present = {str(r["name"]) for r in rows}
    missing = sorted(set(procedures) - present)
    if missing:
        hint = (f" (APOC core: put {APOC_JAR} in the server's plugins folder, or run with --beam-neo4j=local, "
                "which adds it)" if needs_apoc(missing) else "")
        raise Neo4jServiceError(f"{where} lacks the procedures {', '.join(missing)} that the system needs{hint}",
                                label=connection.label)

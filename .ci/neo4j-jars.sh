#!/usr/bin/env bash
# Resolve the Neo4j 5.26 server jars (pytest_beam/services/neo4j_pom.xml) and APOC core (for
# neo4j-graphrag, pytest_beam/services/procedures.py) into ~/.m2 and cache
# the class path in ~/.cache/pytest-beam/neo4j-<version>/classpath.txt, so the local Neo4j
# provider starts servers without calling Maven. Idempotent; prints nothing when the cache is
# warm (no Maven call at all), tries Maven offline first when ~/.m2 is warm, needs Java 17+ and
# `mvn` (Maven Central) otherwise. Skipped when NEO4J_HOME points at an unpacked Neo4j.
# Usage: .ci/neo4j-jars.sh      (python: $PYTHON, else $VIRTUAL_ENV/bin/python, else .venv/bin/python, else python3)
set -euo pipefail
exec </dev/null
cd "$(dirname "$0")/.."

if [[ -n "${PYTHON:-}" ]]; then
  py="$PYTHON"
elif [[ -n "${VIRTUAL_ENV:-}" ]]; then
  py="$VIRTUAL_ENV/bin/python"
elif [[ -x .venv/bin/python ]]; then
  py=.venv/bin/python
else
  py="$(command -v python3 || command -v python)"
fi

if "$py" - <<'PY'
import sys
from pytest_beam.services.local_install import cached_classpath, neo4j_home_jars
from pytest_beam.services.procedures import cached_apoc_jar  # neo4j-graphrag's APOC core (issue 44)
sys.exit(0 if (neo4j_home_jars() or cached_classpath()) and cached_apoc_jar() else 1)
PY
then
  exit 0  # warm: nothing to do, nothing to say
fi

echo "neo4j-jars: resolving the Neo4j server jars and APOC core from Maven Central (once; they stay in ~/.m2)"
start=$SECONDS
"$py" -m pytest_beam.services --print
echo "neo4j-jars: done in $((SECONDS - start)) s"

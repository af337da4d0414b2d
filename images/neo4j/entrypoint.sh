#!/bin/sh
# Entrypoint of the docker provider's neo4j image (images/neo4j/Dockerfile). Honours what
# testcontainers' Neo4jContainer and the official image's users rely on:
#  - NEO4J_AUTH=neo4j/<password> sets the initial password (data/dbms/auth.ini, written before
#    the first start, only when absent); NEO4J_AUTH=none turns auth off; unset: neo4j/neo4j,
#    to be changed at first login (Neo4j's own default);
#  - every other NEO4J_x_y__z variable becomes the setting x.y_z in conf/neo4j.conf
#    (NEO4J_HOME, NEO4J_CONF, NEO4J_AUTH and the official image's own switches are not settings);
#    server.memory.heap.{max,initial}_size also give the JVM's -Xmx / -Xms, as Neo4j's launcher does;
#  - Bolt on 0.0.0.0:7687, HTTP on 0.0.0.0:7474;
#  - console mode, so "Remote interface available at ..." is printed on stdout (the line
#    testcontainers waits for) and the JVM is PID 1 (docker stop's SIGTERM shuts Neo4j down).
# JAVA_OPTS is appended to the JVM options.
set -eu
home=/var/lib/neo4j
conf="$home/conf/neo4j.conf"
mkdir -p "$home/conf" "$home/data/dbms" "$home/logs" "$home/run" "$home/plugins" "$home/import"

{
  echo "server.default_listen_address=0.0.0.0"
  echo "server.bolt.listen_address=0.0.0.0:7687"
  echo "server.http.listen_address=0.0.0.0:7474"
  echo "server.directories.data=$home/data"
  echo "server.directories.logs=$home/logs"
  echo "server.directories.run=$home/run"
  echo "server.directories.plugins=$home/plugins"
  echo "server.directories.import=$home/import"
  # a container's graph is thrown away with it: no preallocated 256 MB transaction log
  echo "db.tx_log.preallocate=false"
  # a NEO4J_ variable for another 5.x patch's setting must not stop the server
  echo "server.config.strict_validation.enabled=false"
} >"$conf"

heap_max=""
heap_initial=""
# NEO4J_x_y__z=value -> x.y_z=value ('__' is '_', '_' is '.'); values are one line each
env | grep '^NEO4J_' | while IFS= read -r line; do
  name="${line%%=*}"
  value="${line#*=}"
  case "$name" in
    NEO4J_AUTH|NEO4J_HOME|NEO4J_CONF|NEO4J_EDITION|NEO4J_ACCEPT_LICENSE_AGREEMENT|NEO4J_PLUGINS|NEO4J_DEBUG) continue ;;
  esac
  setting="$(printf '%s' "${name#NEO4J_}" | sed 's/__/\x01/g; s/_/./g; s/\x01/_/g')"
  printf '%s=%s\n' "$setting" "$value" >>"$conf"
done

heap_max="$(sed -n 's/^server\.memory\.heap\.max_size=//p' "$conf" | tail -1)"
heap_initial="$(sed -n 's/^server\.memory\.heap\.initial_size=//p' "$conf" | tail -1)"

auth="${NEO4J_AUTH:-}"
case "$auth" in
  "") ;;
  none) echo "dbms.security.auth_enabled=false" >>"$conf" ;;
  */*)
    user="${auth%%/*}"
    password="${auth#*/}"
    if [ "$user" != "neo4j" ]; then
      echo "NEO4J_AUTH: the user must be neo4j (got '$user')" >&2
      exit 1
    fi
    echo "dbms.security.auth_enabled=true" >>"$conf"
    if [ ! -s "$home/data/dbms/auth.ini" ]; then
      # the line `neo4j-admin dbms set-initial-password` writes, with one SHA-256 iteration:
      # neo4j:SHA-256,<hex sha256(salt + password)>,<hex salt>,1:
      salt_file="$home/run/salt"
      head -c 32 /dev/urandom >"$salt_file"
      salt="$(od -An -v -tx1 "$salt_file" | tr -d ' \n')"
      hash="$( { cat "$salt_file"; printf '%s' "$password"; } | sha256sum | cut -d' ' -f1)"
      rm -f "$salt_file"
      printf 'neo4j:SHA-256,%s,%s,1:\n' "$hash" "$salt" >"$home/data/dbms/auth.ini"
    fi
    ;;
  *)
    echo "NEO4J_AUTH must be neo4j/<password> or none (got a value without '/')" >&2
    exit 1
    ;;
esac

set -- \
  ${heap_max:+-Xmx$heap_max} ${heap_initial:+-Xms$heap_initial} \
  -XX:+UseG1GC -XX:-OmitStackTraceInFastThrow -XX:+UnlockExperimentalVMOptions \
  -XX:+TrustFinalNonStaticFields -XX:+DisableExplicitGC -Djdk.nio.maxCachedBufferSize=1024 \
  -Dio.netty.tryReflectionSetAccessible=true -Dlog4j2.disable.jmx=true \
  --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
  -XX:TieredStopAtLevel=1 -Dfile.encoding=UTF-8 ${JAVA_OPTS:-} \
  -cp "$home/lib/*" org.neo4j.server.CommunityEntryPoint \
  --home-dir="$home" --config-dir="$home/conf" --console-mode
unset NEO4J_AUTH
exec java "$@"

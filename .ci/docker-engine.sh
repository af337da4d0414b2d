#!/usr/bin/env bash
# Make a Docker engine answer on this machine, for the docker Neo4j provider's tests.
# Idempotent: prints nothing and returns at once when `docker info` already answers.
# Otherwise installs Debian's docker.io (dockerd, containerd, runc) when dockerd is missing
# (needs root and apt), starts dockerd in the background (no systemd on CI machines; its log is
# ~/.cache/pytest-beam/dockerd.log), and waits up to 60 s for it. Fails loudly (non-zero, with
# the daemon log's tail) when the engine does not come up.
# Usage: .ci/docker-engine.sh
set -euo pipefail
exec </dev/null

answers() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && answers; then
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  echo "docker-engine: installing docker.io from the Debian packages"
  if [[ $(id -u) -ne 0 ]]; then
    echo "docker-engine: dockerd is missing and this is not root: install docker.io yourself" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

log_dir="${XDG_CACHE_HOME:-$HOME/.cache}/pytest-beam"
mkdir -p "$log_dir"
log="$log_dir/dockerd.log"
if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "docker-engine: starting dockerd (log: $log)"
  # setsid: the daemon leaves this script's process group, so a Ctrl-C of CI does not end it
  setsid dockerd >"$log" 2>&1 </dev/null &
fi

for _ in $(seq 1 120); do
  if answers; then
    echo "docker-engine: $(docker version --format 'dockerd {{.Server.Version}}' 2>/dev/null) answers"
    exit 0
  fi
  sleep 0.5
done
echo "docker-engine: dockerd did not answer within 60 s; its log ends:" >&2
tail -n 30 "$log" >&2 || true
exit 1

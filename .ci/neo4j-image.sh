#!/usr/bin/env bash
# Build the docker provider's pinned image neo4j:<NEO4J_VERSION> locally, with no image registry:
# a Debian bookworm root file system made by debootstrap from the Debian mirror apt already uses
# (minbase + Java 17 headless), the jars of the local provider's class path (.ci/neo4j-jars.sh)
# and images/neo4j/entrypoint.sh, put together by images/neo4j/Dockerfile (FROM scratch).
# Idempotent: prints nothing when the image exists. The root file system is cached as
# ~/.cache/pytest-beam/debian-bookworm-java17-rootfs.tar (a rebuild then takes seconds; about
# 3 minutes without it). Needs root (debootstrap), an engine (.ci/docker-engine.sh) and the jars.
# Usage: .ci/neo4j-image.sh        (FORCE=1 rebuilds the image; python as in .ci/neo4j-jars.sh)
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

version="$("$py" -c 'from pytest_beam.services.local_install import NEO4J_VERSION; print(NEO4J_VERSION)')"
image="neo4j:$version"
if [[ -z "${FORCE:-}" ]] && docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/pytest-beam"
rootfs_tar="$cache/debian-bookworm-java17-rootfs.tar"
mkdir -p "$cache"
start=$SECONDS

if [[ ! -s "$rootfs_tar" ]]; then
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "neo4j-image: installing debootstrap from the Debian packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  # the Debian mirror apt already uses (deb822 sources or sources.list), else deb.debian.org
  mirror="$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -1 | tr -d ' ' || true)"
  mirror="${mirror:-http://deb.debian.org/debian}"
  echo "neo4j-image: debootstrap bookworm + Java 17 from $mirror (about 3 minutes, once)"
  work="$(mktemp -d "$cache/rootfs.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  if ! debootstrap --variant=minbase --include=openjdk-17-jre-headless \
      bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    echo "neo4j-image: debootstrap failed; its log ends:" >&2
    tail -n 30 "$work/debootstrap.log" >&2
    tail -n 30 "$work/root/debootstrap/debootstrap.log" >&2 2>/dev/null || true
    exit 1
  fi
  # a smaller image: no apt lists, docs or man pages
  rm -rf "$work/root/var/lib/apt/lists/"* "$work/root/var/cache/apt/"*.bin \
    "$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/usr/share/locale"
  tar -C "$work/root" --numeric-owner -cf "$work/rootfs.tar" .
  mv "$work/rootfs.tar" "$rootfs_tar"
  rm -rf "$work"
  trap - EXIT
fi

bash .ci/neo4j-jars.sh
classpath="$("$py" -c 'from pytest_beam.services.local_install import resolve_classpath; print("\n".join(resolve_classpath()))')"

ctx="$(mktemp -d "$cache/image-context.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
cp images/neo4j/Dockerfile images/neo4j/entrypoint.sh "$ctx/"
ln "$rootfs_tar" "$ctx/rootfs.tar" 2>/dev/null || cp "$rootfs_tar" "$ctx/rootfs.tar"
mkdir "$ctx/lib"
while IFS= read -r jar; do cp "$jar" "$ctx/lib/"; done <<<"$classpath"
echo "neo4j-image: building $image ($(ls "$ctx/lib" | wc -l) jars)"
if ! DOCKER_BUILDKIT=0 docker build -q --build-arg "NEO4J_VERSION=$version" -t "$image" "$ctx" \
    >"$ctx/build.log" 2>&1; then
  echo "neo4j-image: docker build failed:" >&2
  tail -n 30 "$ctx/build.log" >&2
  exit 1
fi
echo "neo4j-image: $image built in $((SECONDS - start)) s"

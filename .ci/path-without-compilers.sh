#!/usr/bin/env bash
# Print a PATH that reaches every command the current PATH does, except compilers and build tools
# (cc, c++, gcc, g++, clang, cpp, cmake and friends, rustc, cargo): a folder of symlinks, made
# under DIR, with each name's first match on PATH. .ci/run runs the README's first command with it,
# to prove that installing the `local` extra builds nothing. Fails if a compiler is still reachable.
# Usage: PATH="$(bash .ci/path-without-compilers.sh DIR)"
set -euo pipefail
dir="$1/bin"
mkdir -p "$dir"
excluded='^(cc|c\+\+|c89.*|c99.*|cpp(-[0-9]+)?|gcc.*|g\+\+.*|.*-gcc(-.*)?|.*-g\+\+(-.*)?|.*-cc|clang.*|cmake.*|ccmake|ctest|cpack|rustc|rustup|cargo|ninja|tcc|icc|icx)$'
IFS=: read -r -a folders <<< "$PATH"
for folder in "${folders[@]}"; do
  [[ -d "$folder" ]] || continue
  for path in "$folder"/*; do
    name="${path##*/}"
    [[ -x "$path" && ! -d "$path" ]] || continue
    [[ "$name" =~ $excluded ]] && continue
    [[ -e "$dir/$name" || -L "$dir/$name" ]] && continue  # the first match on PATH wins, as for a shell
    ln -s "$path" "$dir/$name"
  done
done
for tool in cc c++ gcc g++ clang cmake; do
  if PATH="$dir" command -v "$tool" >/dev/null 2>&1; then
    echo "path-without-compilers: $tool is still reachable" >&2
    exit 1
  fi
done
echo "$dir"

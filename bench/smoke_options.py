"""The ``--smoke`` and ``--cache`` options every runnable bench shares (CI: .ci/bench-smoke.sh).

``--smoke`` runs a bench's real code path on tiny input (one short conversation, a few
questions, one round) and prints the same tables, so that a renamed or moved name fails CI
instead of the next full run. ``--cache DIR`` is the cache folder of the run: pytest-beam's own
(``BEAM_CACHE_DIR``: Neo4j's class path and class-data archive, the int8 embedding model, the
embedded model's GGUF) and the benches' (``retrieval-bench/`` under it). Without ``--cache`` a
bench uses ``$BEAM_CACHE_DIR`` or the usual default, except in smoke mode, where it starts from
a fresh empty folder (removed at exit) unless ``$BEAM_CACHE_DIR`` is set: a cold cache.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import tempfile
from pathlib import Path


def add_smoke_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--smoke", action="store_true",
                        help="the real code path on tiny input, on a cold cache unless --cache or "
                             "$BEAM_CACHE_DIR says otherwise (CI: .ci/bench-smoke.sh)")
    parser.add_argument("--cache", default=None, metavar="DIR",
                        help="cache folder (BEAM_CACHE_DIR) for this run; smoke default: a fresh empty one")


def use_cache(args: argparse.Namespace) -> Path | None:
    """Point ``BEAM_CACHE_DIR`` at the run's cache folder (before anything reads it); return it.

    ``None``: nothing chosen, pytest-beam's default applies (normal mode without ``--cache``).
    """
    if args.cache:
        folder = Path(args.cache).resolve()
    elif os.environ.get("BEAM_CACHE_DIR"):
        folder = Path(os.environ["BEAM_CACHE_DIR"])
    elif args.smoke:
        folder = Path(tempfile.mkdtemp(prefix="beam-bench-cache-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    else:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["BEAM_CACHE_DIR"] = str(folder)  # child processes (pytest, Neo4j) see it too
    if args.smoke:
        print(f"(smoke: tiny input, cache folder {folder})", flush=True)
    return folder


def smoke_defaults(parser: argparse.ArgumentParser, args: argparse.Namespace, **values: object) -> None:
    """In smoke mode, the tiny ``values`` for every option still at its normal default (an option
    given on the command line keeps its value)."""
    if args.smoke:
        for name, value in values.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)

"""Where pytest-beam keeps what it builds once per machine.

Neo4j's class path and class-data archive and the quantized embedding model live under
``$BEAM_CACHE_DIR`` (default ``$XDG_CACHE_HOME/pytest-beam``, else ``~/.cache/pytest-beam``).
xdist workers start together, so whoever builds one of these holds
:func:`pytest_beam.files.file_lock` first.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("BEAM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "pytest-beam",
    )
    return Path(base)

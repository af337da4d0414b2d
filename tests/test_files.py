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


def test_a_line_log_on_a_full_disk_keeps_what_it_could_not_write_and_never_tears_a_line(small_disk) -> None:
    """Issue 43: a usage journal's line the full disk refused failed the call it counted, or left half
    a line glued to the next one; the log cuts a refused line back out and keeps it for later."""
    from pytest_beam.files import LineLog

    disk = small_disk("1m")
    kept = LineLog(disk.path / "parts" / "gw0.usage.jsonl", keep_unwritten=True)
    lost = LineLog(disk.path / "trace-gw0.jsonl", keep_unwritten=False)
    assert kept.append('{"n": 0}') and lost.append('{"n": 0}')
    disk.fill()  # nothing at all is free
    long = '{"n": 1, "text": "' + "x" * 20000 + '"}'  # more than the file's last block holds
    assert not kept.append(long) and not kept.append('{"n": 2}')
    assert not lost.append(long)
    assert kept.unwritten == [long, '{"n": 2}'] and kept.error is not None and kept.error.errno == 28
    assert lost.lost == 1 and lost.unwritten == []
    assert kept.path.read_text() == '{"n": 0}\n' and lost.path.read_text() == '{"n": 0}\n'  # no torn line
    disk.filler.unlink()  # space again: the kept lines go first, in order
    assert kept.append('{"n": 3}') and kept.unwritten == []
    assert kept.path.read_text().splitlines() == ['{"n": 0}', long, '{"n": 2}', '{"n": 3}']
    kept.close()
    lost.close()


def test_the_spend_counter_is_written_in_place_so_a_full_disk_cannot_refuse_it(small_disk) -> None:
    from pytest_beam.llm.budget import FileBudget

    disk = small_disk("1m")
    budget = FileBudget.in_run_dir(disk.path / "run", max_calls=5)
    budget.prepare()
    disk.fill()
    for _ in range(3):
        budget.reserve("agent")
    budget.record(100, 10)
    assert budget.used() == {"calls": 3, "prompt_tokens": 100, "completion_tokens": 10, "tokens": 110, "refused": 0}
    assert FileBudget.in_run_dir(disk.path / "run", max_calls=5).used()["calls"] == 3  # another process reads it


def test_a_line_log_whose_folder_was_deleted_writes_its_lines_back_at_the_end(tmp_path: Path) -> None:
    """Issue 43 (a vanished folder): lines appended after the run's folder was deleted went to a
    file nobody could open any more; the log writes them back where they belong."""
    import shutil

    from pytest_beam.files import LineLog

    log = LineLog(tmp_path / "run" / "parts" / "gw0.usage.jsonl", keep_unwritten=True)
    assert log.append("one")
    shutil.rmtree(tmp_path / "run")
    assert log.append("two") and not log.path.exists()  # written, into a file no path names
    log.restore_if_vanished()
    assert log.path.read_text() == "one\ntwo\n" and log.unwritten == []
    log.restore_if_vanished()  # a file that is there stays as it is
    assert log.append("three") and log.path.read_text() == "one\ntwo\nthree\n"
    log.close()


def test_the_spend_counter_survives_its_folder_deleted_and_refuses_a_call_it_cannot_count(
        tmp_path: Path, small_disk) -> None:
    import shutil

    from pytest_beam.llm.budget import FileBudget
    from pytest_beam.llm.errors import SpendCounterError

    budget = FileBudget.in_run_dir(tmp_path / "run", max_calls=5)
    budget.reserve("agent")
    budget.reserve("agent")
    shutil.rmtree(tmp_path / "run")
    budget.reserve("agent")  # counted from what this process last saw, never from zero
    assert budget.used()["calls"] == 3
    disk = small_disk("1m")
    full = FileBudget.in_run_dir(disk.path / "run", max_calls=5)  # never prepared: its file needs room
    disk.fill()
    with pytest.raises(SpendCounterError, match=r"could not be written \(the disk holding .* is full.*not sent"):
        full.reserve("agent")
    full.record(10, 2)  # a paid call's tokens are kept for the counter's next write, never raised
    disk.filler.unlink()
    assert full.used()["tokens"] == 12

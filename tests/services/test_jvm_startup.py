"""The local JVM's fast start: unsigned jar copies and the class-data archive, unit and for real."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytest_beam.services import open_driver
from pytest_beam.services.jvm_startup import class_data_archive, run_classpath
from pytest_beam.services.local import LocalNeo4jProvider


def _jar(path: Path, names: list[str]) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, f"content of {name}")
    return str(path)


def test_signed_jars_are_copied_without_signatures_and_the_rest_kept(tmp_path):
    signed = _jar(tmp_path / "signed.jar", ["META-INF/MANIFEST.MF", "META-INF/ECLIPSE_.SF",
                                            "META-INF/ECLIPSE_.RSA", "org/x/A.class"])
    plain = _jar(tmp_path / "plain.jar", ["META-INF/MANIFEST.MF", "org/y/B.class"])
    cache = tmp_path / "cache"
    out = run_classpath([signed, plain], cache)
    assert out == [str(cache / "unsigned" / "signed.jar"), plain]
    with zipfile.ZipFile(out[0]) as zf:
        assert sorted(zf.namelist()) == ["META-INF/MANIFEST.MF", "org/x/A.class"]
        assert zf.read("org/x/A.class") == b"content of org/x/A.class"
    # remembered: the second call reads the file, and a changed class path is scanned again
    assert (cache / "run-classpath.txt").is_file()
    assert run_classpath([signed, plain], cache) == out
    assert run_classpath([plain], cache) == [plain]


def test_one_jvm_writes_the_archive_others_wait_then_all_use_it(tmp_path):
    cache = tmp_path / "cache"
    first = class_data_archive("java", ["a.jar"], ["-Xfoo"], cache)
    assert len(first.options) == 1 and first.options[0].startswith("-XX:ArchiveClassesAtExit=")
    assert class_data_archive("java", ["a.jar"], ["-Xfoo"], cache).options == ()  # being written
    assert first.writing is not None
    first.writing.write_bytes(b"archive")  # what the JVM does at a clean exit
    first.finish()
    final = next(cache.glob("classes-*.jsa"))
    assert final.read_bytes() == b"archive" and not list(cache.glob("classes-*.tmp"))
    assert class_data_archive("java", ["a.jar"], ["-Xfoo"], cache).options == (f"-XX:SharedArchiveFile={final}",)
    # another class path or other JVM options: another archive
    assert class_data_archive("java", ["b.jar"], ["-Xfoo"], cache).options[0].startswith("-XX:ArchiveClassesAtExit=")


def test_a_killed_writer_leaves_no_archive_and_a_dead_holders_lock_is_taken_over(tmp_path):
    cache = tmp_path / "cache"
    killed = class_data_archive("java", ["a.jar"], [], cache)
    killed.finish()  # nothing written: a JVM killed, not stopped
    assert not list(cache.glob("classes-*.jsa")) and not list(cache.glob("classes-*.tmp"))
    # a writer killed while it held the lock does not block the archive for ever
    key_lock = next(cache.glob("classes-*.lock"))
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, filelock; lock = filelock.FileLock(sys.argv[1]); lock.acquire(timeout=0); "
        "print('held', flush=True); sys.stdin.read()"), str(key_lock)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    assert class_data_archive("java", ["a.jar"], [], cache).options == ()  # held by a live writer
    holder.kill()
    holder.wait()
    again = class_data_archive("java", ["a.jar"], [], cache)
    assert again.options[0].startswith("-XX:ArchiveClassesAtExit=")
    again.finish()


@pytest.mark.slow  # starts a JVM (or a run) of its own
def test_after_one_clean_stop_servers_start_from_the_archive(tmp_path):
    why = LocalNeo4jProvider.unavailable_reason()
    if why:
        pytest.skip(f"local Neo4j provider unavailable: {why}")
    startup = tmp_path / "startup"  # as on a fresh machine: no unsigned copies, no archive yet
    provider = LocalNeo4jProvider(work_dir=tmp_path, startup_dir=startup)
    first = provider.create("cds-first")
    first.start()
    assert any(a.startswith("-XX:ArchiveClassesAtExit=") for a in first.process.args)
    signed = [j for j in provider.classpath() if "eclipse-collections" in j]
    assert signed and all(j.startswith(str(startup / "unsigned")) for j in signed)
    first.stop()
    archives = list(startup.glob("classes-*.jsa"))
    assert archives, "a clean stop wrote no class-data archive"
    second = provider.create("cds-second")
    conn = second.start()
    try:
        args = second.process.args
        assert any(a.startswith("-XX:SharedArchiveFile=") and Path(a.split("=", 1)[1]) in archives for a in args)
        with open_driver(conn) as driver:
            records, _, _ = driver.execute_query("RETURN 41 + 1 AS n", database_=conn.database)
            assert records[0]["n"] == 42
    finally:
        second.stop()

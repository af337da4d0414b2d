"""Issue 32 item 7: a results folder on a full disk, as a user meets it. A real tmpfs is mounted
and filled (tests/small_disk.py); the plugin runs in a subprocess against the scripted model.

1. The local Neo4j's home lives under --beam-results: on a full disk Neo4j logs 'No space left
   on device' and waits; the run waited out the start timeout and said 'raise the start timeout
   on a slow machine'. It must stop at once and name the full disk.
2. A disk that fills while the run goes: writing the record must say so in one line (it ended in
   INTERNALERROR with a traceback), and the record must not be lost (it goes under the temporary
   folder, named in that line), with a non-zero exit status.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.e2e.test_caps import beam
from tests.model_server import ScriptedModelServer

pytestmark = [pytest.mark.e2e]


@pytest.mark.neo4j
def test_neo4j_on_a_full_disk_says_the_disk_is_full(tmp_path, beam_data_dir, small_disk):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    disk = small_disk("16m")
    disk.fill(leave_bytes=256 * 1024)
    with ScriptedModelServer(responder=ScriptedBeamModel()) as server:
        started = time.monotonic()
        proc = beam(tmp_path, server, beam_data_dir, f"--beam-results={disk.path / 'results'}",
                    "--beam-neo4j-start-timeout=90", "--beam-snapshot=off")
        took = time.monotonic() - started
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "2 errors" in proc.stdout, out[-4000:]
    (line,) = [ln for ln in out.splitlines() if ln.startswith("2 x ")]  # the one-line cause of both errors
    assert re.search(r"the disk holding \S+/results/\S+ is full "
                     r"\(No space left on device, [0-9.]+ MB free\)", line), line
    assert "--beam-results" in line and "start timeout" not in out, line
    assert took < 80, took  # not the start timeout (90 s)


CONFTEST = '''
import os
from pytest_beam.system import IngestReport, MemorySystem, SystemAnswer


class FillingSystem(MemorySystem):
    """Answers without a graph; when the run is done with it, the results disk fills up (another
    process's download, a log gone wild)."""

    name = "filling"

    def __init__(self, context):
        self.context = context

    def ingest(self, documents):
        return IngestReport(chunks=len(documents))

    def answer(self, question):
        return SystemAnswer(text="The chat never says.")

    def close(self):
        with open(os.environ["BEAM_TEST_FILLER"], "ab") as fh:
            try:
                while True:
                    fh.write(b"\\\\0" * 65536)
                    fh.flush()
            except OSError:
                pass


def pytest_beam_make_system(context):
    return FillingSystem(context)
'''


def test_a_record_that_cannot_be_written_says_so_and_is_kept(tmp_path, beam_data_dir, small_disk, monkeypatch):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    disk = small_disk("8m")
    monkeypatch.setenv("BEAM_TEST_FILLER", str(disk.filler))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # where the record goes instead
    (tmp_path / "tmp").mkdir()
    with ScriptedModelServer(responder=ScriptedBeamModel()) as server:
        proc = beam(tmp_path, server, beam_data_dir, f"--beam-results={disk.path / 'results'}", "--beam-snapshot=off",
                    "--beam-pass-score=0")
    out = proc.stdout + proc.stderr
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-4000:]
    assert proc.returncode == pytest.ExitCode.INTERNAL_ERROR and "2 passed" in proc.stdout, out[-4000:]
    (line,) = [ln for ln in out.splitlines() if "the record could not be written" in ln]
    assert f"could not be written to {disk.path / 'results'}/" in line and "is full (No space left on device" in line
    (kept,) = (tmp_path / "tmp" / "pytest-beam-records").glob("*/record.json")
    assert f"it was written to {kept} instead" in line, line
    record = json.loads(kept.read_text())
    assert [q["outcome"] for q in record["questions"]] == ["passed", "passed"]
    assert (kept.parent / "trace.jsonl.gz").is_file()
    assert f"record: {kept}" in out

"""Answer snapshots are readable UTF-8 text files named by question id, through syrupy's public hooks."""

from __future__ import annotations

from pytest_beam.session.answer_snapshots import AnswerSnapshotExtension, snapshot_path

TEST_FILE = '''
import pytest
from pytest_beam.session.answer_snapshots import AnswerSnapshotExtension

ANSWER = "Your sister's dog is called Biscuit.\\nCafé at 9 — “quoted”."

@pytest.mark.parametrize("qid", ["conv1:information_extraction:0"], ids=["conv1:information_extraction:0"])
def test_answer(snapshot, qid):
    assert snapshot(extension_class=AnswerSnapshotExtension) == ANSWER
'''
ANSWER = "Your sister's dog is called Biscuit.\nCafé at 9 — “quoted”."


def test_serialize_gives_the_text_as_utf8():
    assert AnswerSnapshotExtension().serialize(ANSWER) == ANSWER.encode("utf-8")


def test_snapshot_is_written_as_readable_text_and_then_matches(pytester):
    pytester.makepyfile(test_answers=TEST_FILE)
    written = pytester.runpytest("-p", "no:beam", "-p", "no:cacheprovider", "--snapshot-update")
    written.assert_outcomes(passed=1)
    path = snapshot_path(pytester.path, "conv1:information_extraction:0")
    assert path.read_text(encoding="utf-8") == ANSWER
    assert path.read_bytes() == ANSWER.encode("utf-8")  # no repr, no header, no trailing newline added

    pytester.runpytest("-p", "no:beam", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    path.write_text("Something else.", encoding="utf-8")
    pytester.runpytest("-p", "no:beam", "-p", "no:cacheprovider").assert_outcomes(failed=1)

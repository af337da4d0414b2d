"""One typed result of a question from the test to the record (issue 28 point 1): the ``beam_result``
user property, a worker's part and the record are one ``QuestionRecord``, and a key nobody knows is
an error in the run while a record file from a newer version still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_beam.results.schema import QuestionRecord, RunRecord, UsageRow
from pytest_beam.results.store import read_record, write_record
from pytest_beam.session.collector import PartError, RunCollector, verdict_of

QID = "conv3:summarization:0"
NODEID = f"beam::test_question[{QID}]"


class _Session:
    is_worker = False
    systems = ["graphrag"]
    runtime = None

    def __init__(self, run_dir: Path, *, worker: bool = False) -> None:
        self.run_dir = run_dir
        self.is_worker = worker
        self.process_name = "gw0" if worker else "controller"


def _collector(tmp_path: Path, *, worker: bool = False) -> RunCollector:
    return RunCollector(_Session(tmp_path, worker=worker))  # type: ignore[arg-type]


def _report(when: str, outcome: str, result: str | None = None, longrepr: object = None) -> pytest.TestReport:
    props = [("beam_result", result)] if result is not None else []
    return pytest.TestReport(NODEID, ("x", 0, "x"), {}, outcome, longrepr, when, user_properties=props)  # type: ignore[arg-type]


def _result(**fields: object) -> QuestionRecord:
    return QuestionRecord(id=QID, conversation_id="3", ability="summarization", answer="An answer.", score=0.75,
                          usage={"agent": UsageRow(calls=2, prompt_tokens=100)}, phase_seconds={"agent": 1.5},
                          answer_diff="-old\n+new\n", **fields)  # type: ignore[arg-type]


def test_an_unknown_key_in_a_result_is_an_error_that_names_it(tmp_path):
    """Before, the controller took any JSON and build_record dropped the keys it did not know."""
    collector = _collector(tmp_path)
    text = json.dumps({**json.loads(_result().in_run_json()), "scroe": 1.0})
    with pytest.raises(PartError, match=r"(?s)beam::test_question\[conv3:summarization:0\].*scroe.*Extra inputs"):
        collector.add_report(_report("call", "passed", text))


def test_a_worker_part_with_a_bad_question_is_refused_naming_the_file_and_question(tmp_path):
    """Before, a worker's part was merged as any dict: a bad entry surfaced (if at all) as a bare
    validation error of the whole record, or its unknown keys vanished."""
    parts = tmp_path / "parts"
    parts.mkdir()
    good = _result().in_run_dict()
    (parts / "gw1.json").write_text(json.dumps({"questions": {QID: {**good, "score": "three quarters"}}}))
    collector = _collector(tmp_path)
    with pytest.raises(PartError, match=r"(?s)gw1\.json holds question conv3:summarization:0.*score"):
        collector.merge_parts()


def test_a_result_travels_through_a_worker_s_part_unchanged(tmp_path):
    """The worker writes its results as they were set; the controller reads back the same records
    and fills only the fields its own reports lack (a crashed worker's item: outcome only)."""
    worker = _collector(tmp_path, worker=True)
    worker.add_report(_report("setup", "passed"))
    worker.add_report(_report("call", "failed", _result().in_run_json()))
    part = json.loads((tmp_path / "parts" / "gw0.json").read_text())
    assert part["questions"][QID]["answer_diff"] == "-old\n+new\n" and "trace" not in part["questions"][QID]

    controller = _collector(tmp_path)
    controller.add_report(_report("call", "failed", longrepr="worker 'gw0' crashed"))
    controller.merge_parts()
    merged = controller.questions[QID]
    assert merged == worker.questions[QID]  # the controller's failed verdict, the worker's whole result
    assert (merged.outcome, merged.score, merged.phase_seconds, merged.usage["agent"].prompt_tokens) == (
        "failed", 0.75, {"agent": 1.5}, 100)


def test_a_question_only_set_up_has_no_verdict_yet(tmp_path):
    collector = _collector(tmp_path)
    collector.add_report(_report("setup", "passed"))
    assert verdict_of(collector.questions[QID]) is None
    collector.add_report(_report("call", "passed", _result().in_run_json()))
    assert verdict_of(collector.questions[QID]) == "passed"
    assert collector.questions[QID].error is None


def test_the_record_file_leaves_out_the_run_only_fields(tmp_path):
    record = RunRecord(run_id="r", questions=[_result(outcome="passed")])
    written = json.loads(write_record(tmp_path / "run", record, []).read_text())
    assert "phase_seconds" not in written["questions"][0] and "answer_diff" not in written["questions"][0]
    assert set(written["questions"][0]) == set(QuestionRecord.model_fields) - QuestionRecord.RUN_ONLY
    assert read_record(tmp_path / "run").questions[0].score == 0.75


def test_a_record_file_from_a_newer_version_still_loads(tmp_path):
    """Reading a file stays lenient on purpose: a newer version may add a question field."""
    path = write_record(tmp_path / "run", RunRecord(run_id="r", questions=[_result()]), [])
    data = json.loads(path.read_text())
    data["questions"][0]["a_field_from_later"] = {"x": 1}
    path.write_text(json.dumps(data))
    assert read_record(path).questions[0].answer == "An answer."
    with pytest.raises(ValueError, match="a_field_from_later"):  # in the run the same key is an error
        QuestionRecord.model_validate(data["questions"][0])

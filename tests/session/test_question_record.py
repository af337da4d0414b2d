"""One typed result of a question from the test to the record (issue 28 point 1): the ``beam_result``
user property, a worker's part and the record are one ``QuestionRecord``, and a key nobody knows is
an error in the run while a record file from a newer version still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_beam.results.schema import QuestionRecord, RunRecord, UsageRow
from pytest_beam.results.store import read_record, write_record
from pytest_beam.session.interrupt import TerminateAsInterrupt
from pytest_beam.session.plan import RunPlan
from pytest_beam.session.run_results import ResultError, RunCollector, verdict_of

QID = "conv3:summarization:0"
NODEID = f"beam::test_question[{QID}]"


def _collector(tmp_path: Path, *, worker: bool = False) -> RunCollector:
    """A collector as the session builds it; what these tests never reach (config, settings, set) is None."""
    plan = RunPlan(config=None, settings=None, worker_id="gw0" if worker else None,  # type: ignore[arg-type]
                   run_id="run", run_dir=tmp_path)
    return RunCollector(plan, None, ["graphrag"], None, started=0.0, relay_counts=dict,  # type: ignore[arg-type]
                        terminate=TerminateAsInterrupt())


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
    with pytest.raises(ResultError, match=r"(?s)beam::test_question\[conv3:summarization:0\].*scroe.*Extra inputs"):
        collector.add_report(_report("call", "passed", text))


def test_a_worker_part_with_a_bad_question_is_refused_naming_the_file_and_question(tmp_path):
    """Before, a worker's part was merged as any dict: a bad entry surfaced (if at all) as a bare
    validation error of the whole record, or its unknown keys vanished."""
    parts = tmp_path / "parts"
    parts.mkdir()
    good = _result().in_run_dict()
    (parts / "gw1.json").write_text(json.dumps({"questions": {QID: {**good, "score": "three quarters"}}}))
    collector = _collector(tmp_path)
    with pytest.raises(ResultError, match=r"(?s)gw1\.json holds question conv3:summarization:0.*score"):
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


def test_the_result_of_an_outcome_and_its_user_properties(tmp_path):
    """question_record carries the values the old dict did (judge_score stays the scorer's; the
    meter's latency_s is a usage row's seconds); the controller reads the property back equal."""
    from pytest_beam.data.records import ProbingQuestion
    from pytest_beam.scoring.scores import ItemScore, QuestionScore
    from pytest_beam.session.question_step import Outcome
    from pytest_beam.session.verdict import question_record, record_unjudged
    from pytest_beam.system import SystemAnswer

    q = ProbingQuestion(conversation_id="3", ability="summarization", index=0, question="What happened?",
                        rubric=("a", "b"), source_message_ids=(4, 2))
    score = QuestionScore(question_id=QID, ability="summarization", mode="default", score=0.5, judge_calls=2,
                          items=[ItemScore(rubric_item="a", score=1.0, judge_score=1, reason="yes"),
                                 ItemScore(rubric_item="b", score=0.0, judge_score="0", reason="no", parsed=False)],
                          flags=["parse_error"])
    meter_row = {"calls": 2, "prompt_tokens": 30, "completion_tokens": 4, "latency_s": 0.25, "usage_missing": 0}
    answer = SystemAnswer("Things.", retrieved_message_ids={9, 2}, trace=[{"kind": "model"}], steps=3,
                          context_tokens=120)
    outcome = Outcome(q, answer, score, {"judge": meter_row}, {"agent": 1.0, "judge": 0.5}, 0.5, "graphrag")
    result = question_record(outcome)
    assert result.model_dump(mode="json", context={"in_run": True}) == {
        "id": QID, "conversation_id": "3", "ability": "summarization", "index": 0, "question": "What happened?",
        "answer": "Things.", "score": 0.5, "score_excluding_known_bad": 0.5, "event_f1": None,
        "event_tau_norm": None, "evidence_recall": 0.5, "flags": ["parse_error"], "known_bad_reason": None,
        "items": [{"rubric_item": "a", "score": 1.0, "judge_score": None, "reason": "yes", "reply": None,
                   "parsed": True, "reply_format": None, "repeats": []},
                  {"rubric_item": "b", "score": 0.0, "judge_score": None, "reason": "no", "reply": None,
                   "parsed": False, "reply_format": None, "repeats": []}],
        "event_detail": None, "outcome": "passed", "error": None,
        "usage": {"judge": {"calls": 2, "cached_calls": 0, "prompt_tokens": 30, "completion_tokens": 4,
                            "seconds": 0.25, "replayed_calls": 0, "cached_tokens": 0, "retries": 0, "errors": 0,
                            "abandoned": 0}},
        "agent_steps": 3, "seconds": 1.5, "scorer": "default", "source_message_ids": [4, 2],
        "retrieved_message_ids": [2, 9], "answer_changed": None, "context_tokens": 120, "system": "graphrag",
        "trace": [{"kind": "model"}], "phase_seconds": {"agent": 1.0, "judge": 0.5}, "answer_diff": None}
    assert "outcome" not in result.model_fields_set and "error" not in result.model_fields_set  # the report's

    props: list[tuple[str, object]] = []
    record_unjudged(outcome, props)
    assert [name for name, _ in props] == ["score", "score_excluding_known_bad", "evidence_recall", "flags",
                                           "item_0", "item_1", "calls", "prompt_tokens", "completion_tokens",
                                           "agent_steps", "beam_result"]
    assert dict(props)["calls"] == 2 and dict(props)["flags"] == "parse_error"
    collector = _collector(tmp_path)
    collector.add_report(_report("call", "passed", str(dict(props)["beam_result"])))
    assert collector.questions[QID] == result.model_copy(update={"trace": [], "outcome": "passed"})

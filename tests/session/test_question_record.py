"""A question's result in one shape on one road (issue 42 points 1 and 2): the test builds one
``QuestionRecord`` that keeps the scorer's ``QuestionScore`` as it was given (its items' judge
scores, the typed event-ordering detail, its judge calls), it rides to the controller on its
report and nowhere else, and the record file holds it; a key nobody knows is an error in the run
while a record file from a newer version still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_beam.data.records import ProbingQuestion
from pytest_beam.llm import Usage
from pytest_beam.results.question_record import QuestionRecord, question_record
from pytest_beam.results.record_files import read_record, write_record
from pytest_beam.results.schema import IngestEntry, RunRecord
from pytest_beam.scoring.scores import EventOrderingDetail, ItemScore, LineMatch, QuestionScore
from pytest_beam.session.interrupt import TerminateAsInterrupt
from pytest_beam.session.plan import RunPlan
from pytest_beam.session.run_results import NO_VERDICT, ResultError, RunResults
from pytest_beam.session.verdict import RESULT_PROPERTY, record_unjudged
from pytest_beam.system import FLAG_TIMEOUT, SystemAnswer

QID = "conv3:summarization:0"
NODEID = f"beam::test_question[{QID}]"
QUESTION = ProbingQuestion(conversation_id="3", ability="summarization", index=0, question="What happened?",
                           rubric=("a", "b"), source_message_ids=(4, 2))
EVENTS = ProbingQuestion(conversation_id="3", ability="event_ordering", index=0, question="In what order?",
                         rubric=("A", "B"), source_message_ids=(4,))


class OneSet:
    """The question set a collector reads the questions of its errored items from."""

    questions = (QUESTION, EVENTS)


def _collector(tmp_path: Path, *, worker: bool = False) -> RunResults:
    """A collector as the session builds it; what these tests never reach (config, settings) is None."""
    plan = RunPlan(config=None, settings=None, worker_id="gw0" if worker else None,  # type: ignore[arg-type]
                   run_id="run", run_dir=tmp_path)
    return RunResults(plan, None, ["graphrag"], OneSet(), started=0.0,  # type: ignore[arg-type]
                      relay_counts=lambda: {"mem0": {"chat": 2}}, terminate=TerminateAsInterrupt())


def _report(when: str, outcome: str, result: str | None = None, longrepr: object = None,
            nodeid: str = NODEID) -> pytest.TestReport:
    props = [(RESULT_PROPERTY, result)] if result is not None else []
    return pytest.TestReport(nodeid, ("x", 0, "x"), {}, outcome, longrepr, when, user_properties=props)  # type: ignore[arg-type]


def _judged() -> QuestionScore:
    return QuestionScore(question_id=QID, ability="summarization", mode="default", score=0.5, judge_calls=2,
                         items=[ItemScore(rubric_item="a", score=1.0, judge_score=1, reason="yes", reply='{"score": 1}',
                                          reply_format="json_schema"),
                                ItemScore(rubric_item="b", score=0.0, judge_score="0", reason="no", parsed=False)],
                         flags=["parse_error"])


def _result() -> QuestionRecord:
    answer = SystemAnswer("Things.", retrieved_message_ids={9, 2}, trace=[{"type": "note", "event": "x"}], steps=3,
                          context_tokens=120)
    return question_record(QUESTION, system="graphrag", answer=answer, judged=_judged(),
                           usage={"judge": Usage(calls=2, prompt_tokens=30, completion_tokens=4, seconds=0.25)},
                           seconds={"agent": 1.0, "judge": 0.5})


def test_the_record_keeps_every_field_of_the_scorer_s_score_as_it_was_given():
    """Before, the items went through a dict and back, and lost the judge's own score; the event
    ordering detail became a dict; the judge's calls were not kept."""
    judged, result = _judged(), _result()
    assert result.items == judged.items and [i.judge_score for i in result.items] == [1, "0"]
    assert (result.score, result.event_f1, result.event_tau_norm, result.event_detail) == (0.5, None, None, None)
    assert (result.judge_calls, result.scorer) == (judged.judge_calls, judged.mode)
    assert set(judged.flags) <= set(result.flags)
    # every field of QuestionScore has its place in the record (question_id and mode by their record names)
    kept = {"question_id": "id", "mode": "scorer"}
    assert {kept.get(name, name) for name in QuestionScore.model_fields} <= set(QuestionRecord.model_fields)
    written = json.loads(result.model_dump_json())
    assert written["items"][0]["judge_score"] == 1 and written["judge_calls"] == 2


def test_the_event_ordering_detail_stays_typed_from_the_scorer_to_the_file(tmp_path):
    detail = EventOrderingDetail(precision=1.0, recall=0.5, event_f1=2 / 3, tau_b=None, event_tau_norm=0.0,
                                 f1_times_tau_norm=0.0, answer_lines=["A"], reference_order=["A", "B"],
                                 answer_order=["A"], alignment=[LineMatch(line="A", event="A", event_index=0)])
    judged = QuestionScore(question_id=EVENTS.id, ability="event_ordering", mode="default", score=0.0, judge_calls=2,
                           event_f1=2 / 3, event_tau_norm=0.0, event_detail=detail, flags=["tau_undefined"])
    result = question_record(EVENTS, system="graphrag", answer=SystemAnswer("A"), judged=judged)
    assert result.event_detail is detail
    path = write_record(tmp_path / "run", RunRecord(run_id="r", questions=[result]), [])
    assert read_record(path).questions[0].event_detail == detail


def test_a_question_s_values_and_user_properties():
    """The builder keeps the values the run always recorded (the answer's flags and the scorer's,
    sorted; the sources and what was retrieved; the phases' seconds summed); the user properties
    JUnit shows are the same as before, the record itself last."""
    result = _result()
    assert (result.id, result.answer, result.flags, result.evidence_recall) == (QID, "Things.", ["parse_error"], 0.5)
    assert (result.retrieved_message_ids, result.source_message_ids, result.agent_steps) == ([2, 9], [4, 2], 3)
    assert (result.seconds, result.phase_seconds, result.context_tokens, result.system) == (
        1.5, {"agent": 1.0, "judge": 0.5}, 120, "graphrag")
    assert result.usage["judge"].seconds == 0.25 and result.outcome == "passed"  # 0.5 at the default pass score
    props: list[tuple[str, object]] = []
    record_unjudged(result, props)
    assert [name for name, _ in props] == ["score", "score_excluding_known_bad", "evidence_recall", "flags",
                                           "item_0", "item_1", "calls", "prompt_tokens", "completion_tokens",
                                           "agent_steps", RESULT_PROPERTY]
    assert dict(props)["calls"] == 2 and dict(props)["flags"] == "parse_error"


def test_a_result_travels_on_its_report_once_and_gets_the_report_s_verdict(tmp_path):
    """Before, a worker also wrote each result into its part and the controller merged the two
    field by field; now the report carries it, and the worker's part holds no question."""
    worker = _collector(tmp_path, worker=True)
    worker.add_report(_report("setup", "passed"))
    worker.add_report(_report("call", "failed", _result().run_json()))
    part = json.loads((tmp_path / "parts" / "gw0.json").read_text())
    assert set(part) == {"ingest", "relay", "limits"} and part["relay"] == {"mem0": {"chat": 2}}
    assert "questions" not in part  # its endpoints' limits beside, never a question

    controller = _collector(tmp_path)
    controller.add_report(_report("setup", "passed"))
    assert controller.ran() == set()  # only its setup reported: no verdict yet
    controller.add_report(_report("call", "failed", _result().run_json()))
    [record] = controller.question_records()
    assert record == _result().model_copy(update={"trace": [], "outcome": "failed"})
    assert record.phase_seconds == {"agent": 1.0, "judge": 0.5}  # run-only fields ride along
    assert controller.ran() == {QID}


def test_an_item_whose_report_carried_no_record_is_built_from_its_question(tmp_path):
    controller = _collector(tmp_path)
    crash = "worker 'gw0' crashed while running 'beam::test_question[conv3:summarization:0]'"
    controller.add_report(_report("call", "failed", longrepr=crash))
    controller.add_report(_report("setup", "skipped", longrepr=("x", 1, "Skipped: spend cap reached"),
                                  nodeid=f"beam::test_question[{EVENTS.id}]"))
    crashed, skipped = controller.question_records()
    assert (crashed.id, crashed.outcome, crashed.error, crashed.answer, crashed.score) == (
        QID, "failed", None, None, None)
    assert (crashed.question, crashed.source_message_ids, crashed.system) == ("What happened?", [4, 2], "graphrag")
    assert (skipped.outcome, skipped.error) == ("skipped", "Skipped: spend cap reached")


def test_an_item_without_a_verdict_is_an_error_that_says_so(tmp_path):
    controller = _collector(tmp_path)
    controller.add_report(_report("setup", "passed"))
    [record] = controller.question_records()
    assert (record.outcome, record.error) == ("error", NO_VERDICT)


def test_a_question_the_system_did_not_answer_scores_0_unjudged():
    from pytest_beam.scoring.scorer import score_answer

    def no_judge(**_: object) -> None:
        raise AssertionError("no judge call for an answer the system did not give")

    answer = SystemAnswer("", flags=[FLAG_TIMEOUT])
    judged = score_answer(EVENTS, answer.text, no_judge, "default", gave_no_answer=answer.gave_no_answer)  # type: ignore[arg-type]
    result = question_record(EVENTS, system="graphrag", answer=answer, judged=judged)
    assert (result.score, result.event_f1, result.judge_calls, result.flags) == (0.0, 0.0, 0, [FLAG_TIMEOUT])
    assert result.gave_no_answer and result.answer_flags == [FLAG_TIMEOUT] and result.outcome == "failed"


def test_an_unknown_key_in_a_result_is_an_error_that_names_it(tmp_path):
    """Before, the controller took any JSON and build_record dropped the keys it did not know."""
    collector = _collector(tmp_path)
    text = json.dumps({**json.loads(_result().run_json()), "scroe": 1.0})
    with pytest.raises(ResultError, match=r"(?s)beam::test_question\[conv3:summarization:0\].*scroe.*Extra inputs"):
        collector.add_report(_report("call", "passed", text))


def test_a_worker_part_that_cannot_be_read_is_refused_naming_the_file(tmp_path):
    from pytest_beam.session.worker_parts import PartError

    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "gw1.json").write_text(json.dumps({"ingest": {"17": {"seconds": "three"}}, "relay": {}}))
    with pytest.raises(PartError, match=r"(?s)gw1\.json.*seconds"):
        _collector(tmp_path).merge_parts()


def test_an_ingest_travels_in_its_part_with_its_calls_and_the_record_keeps_it_without(tmp_path):
    from pytest_beam.session.worker_parts import read_parts, write_part

    entry = IngestEntry(chunks=3, empty_extractions=0, entities_by_type={"Person": 2}, relations_by_type={},
                        seconds=1.5, notes=[], usage={"extraction": Usage(calls=3, prompt_tokens=90)})
    failed = IngestEntry(failed="KeyboardInterrupt", seconds=0.5, usage={"extraction": Usage(abandoned=1)})
    write_part(tmp_path, "gw0", {"17": entry, "4": failed}, {}, [])
    [(_, part)] = read_parts(tmp_path)
    assert part.ingest == {"17": entry, "4": failed}
    graph = json.loads(RunRecord(run_id="r", graph=part.ingest).model_dump_json())["graph"]
    assert graph == {"17": {"chunks": 3, "empty_extractions": 0, "entities_by_type": {"Person": 2},
                            "relations_by_type": {}, "seconds": 1.5, "notes": []},
                     "4": {"failed": "KeyboardInterrupt", "seconds": 0.5}}


def test_the_record_file_leaves_out_the_run_only_fields(tmp_path):
    record = RunRecord(run_id="r", questions=[_result()])
    written = json.loads(write_record(tmp_path / "run", record, []).read_text())
    assert "phase_seconds" not in written["questions"][0] and "answer_diff" not in written["questions"][0]
    assert set(written["questions"][0]) == set(QuestionRecord.model_fields) - QuestionRecord.RUN_ONLY
    assert read_record(tmp_path / "run").questions[0].score == 0.5


def test_a_record_file_from_a_newer_version_still_loads(tmp_path):
    """Reading a file stays lenient on purpose: a newer version may add a question field."""
    path = write_record(tmp_path / "run", RunRecord(run_id="r", questions=[_result()]), [])
    data = json.loads(path.read_text())
    data["questions"][0]["a_field_from_later"] = {"x": 1}
    path.write_text(json.dumps(data))
    assert read_record(path).questions[0].answer == "Things."
    with pytest.raises(ValueError, match="a_field_from_later"):  # in the run the same key is an error
        QuestionRecord.model_validate(data["questions"][0])


def test_the_no_answer_flags_are_declared_once_in_the_contract():
    """They were declared four times (session/question_step.py, memory/agent_run.py,
    systems/answering.py and a literal in rejudge); now system.py alone names them, and every
    reader asks SystemAnswer.gave_no_answer or QuestionRecord.gave_no_answer."""
    import ast

    package = Path(__file__).resolve().parents[2] / "pytest_beam"
    declared, literal = set(), set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id in {"NO_ANSWER_FLAGS", "FLAG_AGENT_FAILURE", "FLAG_TIMEOUT"}
                   for t in targets):
                declared.add(path.name)
            if isinstance(node, ast.Constant) and node.value == "agent_failure":
                literal.add(path.name)
    assert declared == literal == {"system.py"}

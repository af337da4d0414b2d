"""``pytest-beam rejudge RUN`` (issue 17 point 5), against the scripted HTTP model server:
no ingest and no agent call (the meter in the new record), and the judge's replies decide the scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_beam.cli import main
from pytest_beam.llm import Usage
from pytest_beam.results.question_record import QuestionRecord
from pytest_beam.results.record_files import read_record, write_record
from pytest_beam.results.schema import RunRecord
from tests.model_server import Reply

OLD_ID = "20250101T000000Z-old0"
IE = "conv17:information_extraction:0"  # 1 rubric item
MSR = "conv17:multi_session_reasoning:0"  # 2 rubric items
ERR = "conv17:temporal_reasoning:0"


@pytest.fixture
def old_results(tmp_path: Path, beam_data_dir: Path, monkeypatch) -> Path:
    for name in ("BEAM_RESULTS", "BEAM_MODE", "BEAM_SCORER", "BEAM_JUDGE_MODEL", "BEAM_BASE_URL", "BEAM_CACHE",
                 "BEAM_JUDGE_RUNS", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    spent = {"agent": Usage(calls=4, prompt_tokens=4000, completion_tokens=100),
             "judge": Usage(calls=1, prompt_tokens=900, completion_tokens=30)}
    questions = [
        QuestionRecord(id=IE, conversation_id="17", ability="information_extraction", answer="An answer.",
                       score=0.0, score_excluding_known_bad=0.0, outcome="failed", usage=spent, scorer="default"),
        QuestionRecord(id=MSR, conversation_id="17", ability="multi_session_reasoning", answer="Another answer.",
                       score=0.5, score_excluding_known_bad=0.5, outcome="passed", flags=["parse_error"],
                       usage=spent, scorer="default"),
        QuestionRecord(id=ERR, conversation_id="17", ability="temporal_reasoning", outcome="error",
                       error="Neo4jServiceDown"),
    ]
    old = RunRecord(run_id=OLD_ID, mode="lite", scorer="default", system="agentic-graphrag", label="nightly",
                    models={"agent": "agent-model", "extraction": "agent-model", "judge": "old-judge"},
                    settings={"data": str(beam_data_dir)}, pass_score=0.5, questions=questions,
                    usage={"extraction": Usage(calls=5), "agent": Usage(calls=8), "judge": Usage(calls=3)},
                    graph={"conv17": {"chunks": 3}})
    results = tmp_path / "results"
    write_record(results / OLD_ID, old, [])
    return results


def run_rejudge(results: Path, server, *extra: str) -> RunRecord:
    argv = ["rejudge", OLD_ID, "--results", str(results), "--beam-base-url", server.base_url,
            "--beam-judge-model", "new-judge", "--beam-cache", "off", *extra]
    assert main(argv) == 0
    new_id = (results / "latest").read_text().strip()
    assert new_id != OLD_ID
    return read_record(results / new_id)


def test_rejudge_calls_only_the_judge_and_points_to_the_old_record(old_results, model_server, capsys):
    model_server.default_reply = Reply.json_object({"score": 1.0, "reason": "complies"})
    new = run_rejudge(old_results, model_server)
    assert new.rejudged_from == OLD_ID
    # the meter: judge calls only, one per rubric item of the two answered questions
    assert set(new.usage) == {"judge"} and new.usage["judge"].calls == 3
    assert all(set(q.usage) <= {"judge"} for q in new.questions)
    assert new.question(IE).usage["judge"].calls == 1 and new.question(MSR).usage["judge"].calls == 2
    assert new.graph == {}
    # and the endpoint saw exactly those: the new judge, no tools, no extraction prompt
    assert model_server.request_count == 3
    assert {r.model for r in model_server.chat_requests} == {"new-judge"}
    assert not any(r.body.get("tools") for r in model_server.chat_requests)
    assert all("RUBRIC CRITERION" in r.text for r in model_server.chat_requests)
    # scores from the new replies; the errored question is kept as it was, never scored
    assert (new.question(IE).score, new.question(MSR).score) == (1.0, 1.0)
    assert new.question(MSR).flags == []  # the old judge's parse_error went with the old judge
    assert new.question(ERR).outcome == "error" and new.question(ERR).score is None
    assert new.models["judge"] == "new-judge" and new.models["agent"] == "agent-model"
    assert (new.system, new.label, new.profile) == ("agentic-graphrag", "nightly", "default")
    assert new.question(IE).answer == "An answer."
    assert f"re-judged the answers of run {OLD_ID}" in capsys.readouterr().out


def test_changed_judge_replies_change_the_scores(old_results, model_server):
    model_server.default_reply = Reply.json_object({"score": 1.0, "reason": "complies"})
    first = run_rejudge(old_results, model_server)
    model_server.default_reply = Reply.json_object({"score": 0.0, "reason": "does not comply"})
    second = run_rejudge(old_results, model_server)
    assert first.overall.mean == 1.0 and second.overall.mean == 0.0
    assert [i.reason for i in second.question(MSR).items] == ["does not comply", "does not comply"]
    assert second.question(IE).outcome == "failed" and first.question(IE).outcome == "passed"
    assert model_server.request_count == 6


def test_rejudge_under_another_profile_with_judge_repeats(old_results, model_server):
    model_server.default_reply = Reply.json_object({"score": 0.5, "reason": "partly"})
    new = run_rejudge(old_results, model_server, "--beam-scorer", "upstream", "--beam-judge-runs", "2")
    assert new.profile == "upstream" and new.scoring.judge_runs == 2
    assert new.question(IE).score == 0.0  # upstream truncates 0.5
    assert new.question(MSR).items[0].repeats == [0.0, 0.0]
    assert new.usage["judge"].calls == 6 and new.overall.judge_agreement == 1.0


def test_rejudge_without_an_endpoint_or_record_exits_2(old_results, capsys, monkeypatch):
    assert main(["rejudge", OLD_ID, "--results", str(old_results), "--beam-cache", "off"]) == 2
    assert "no model endpoint" in capsys.readouterr().err
    assert main(["rejudge", "nope", "--results", str(old_results)]) == 2
    assert "no record" in capsys.readouterr().err


def test_a_multi_system_record_is_rejudged_system_by_system(tmp_path, beam_data_dir, monkeypatch, model_server):
    """The rejudged record kept no `systems`, so its means pooled every system's questions."""
    from pytest_beam.results.system_stats import system_stats

    for name in ("BEAM_RESULTS", "BEAM_BASE_URL", "BEAM_CACHE", "BEAM_JUDGE_RUNS", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    questions = [QuestionRecord(id=IE, conversation_id="17", ability="information_extraction", answer=f"{s} answer.",
                                score=0.0, outcome="failed", system=s, scorer="default")
                 for s in ("graphrag", "bm25")]
    old = RunRecord(run_id=OLD_ID, mode="lite", scorer="default", system="graphrag",
                    models={"agent": "m", "judge": "old-judge"}, settings={"data": str(beam_data_dir)},
                    pass_score=0.5, questions=questions, systems=system_stats(questions, ["graphrag", "bm25"], set()))
    results = tmp_path / "results"
    write_record(results / OLD_ID, old, [])

    def judge(body):  # full marks to graphrag's answer only
        text = json.dumps(body)
        return Reply.json_object({"score": 1.0 if "graphrag answer" in text else 0.0, "reason": "r"})

    model_server.responder = judge
    new = run_rejudge(results, model_server)
    assert list(new.systems) == ["graphrag", "bm25"]
    assert new.systems["graphrag"].overall.mean == 1.0 and new.systems["bm25"].overall.mean == 0.0
    assert new.overall.mean == 1.0 and new.overall.n == 1  # the first system's, as in the run's record


def test_an_answer_the_system_did_not_give_is_scored_0_unjudged_as_in_the_run(tmp_path, beam_data_dir, monkeypatch,
                                                                            model_server):
    """rejudge used to send an agent failure's empty answer to the judge and then count it 0 (its own
    literal of the no-answer flags); it is now the run's builder and the run's rule: no judge call."""
    for name in ("BEAM_RESULTS", "BEAM_BASE_URL", "BEAM_CACHE", "BEAM_JUDGE_RUNS", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    questions = [QuestionRecord(id=IE, conversation_id="17", ability="information_extraction", answer="",
                                score=0.0, outcome="failed", flags=["agent_failure"], scorer="default")]
    old = RunRecord(run_id=OLD_ID, mode="lite", scorer="default", models={"agent": "m", "judge": "old-judge"},
                    settings={"data": str(beam_data_dir)}, pass_score=0.5, questions=questions)
    write_record(tmp_path / "results" / OLD_ID, old, [])
    new = run_rejudge(tmp_path / "results", model_server)
    assert model_server.request_count == 0
    q = new.question(IE)
    assert (q.score, q.judge_calls, q.flags, q.outcome, q.usage) == (0.0, 0, ["agent_failure"], "failed", {})

"""Shards' records joined into one (issue 41 point 3): every question once, usage added up, the means
recomputed over all conversations; records that are not shards of one run refused with the difference
named; absent shards' questions named; a question re-run after an error taken from the re-run."""

from __future__ import annotations

import re

import pytest

from pytest_beam.llm import Usage
from pytest_beam.results.aggregate import aggregate
from pytest_beam.results.merge import MergeError, merge_records
from pytest_beam.results.question_record import QuestionRecord
from pytest_beam.results.schema import RunRecord, ShardInfo

ASSIGNMENT = [["1"], ["4"]]
RUN = ["conv1:abstention:0", "conv1:abstention:1", "conv4:abstention:0", "conv4:abstention:1"]
SETTINGS = {"chunk_tokens": 1000, "model": "m", "mode": "full", "conversations": None, "shard": "1/2",
            "results": "/here", "system": "graphrag", "tier": "100K"}


def question(qid: str, outcome: str = "passed", score: float | None = 1.0, calls: int = 2) -> QuestionRecord:
    conversation = qid.split(":")[0].removeprefix("conv")
    return QuestionRecord(id=qid, conversation_id=conversation, ability="abstention", index=int(qid[-1]),
                          answer=None if score is None else "an answer", score=score, score_excluding_known_bad=score,
                          outcome=outcome, error=None if score is not None else "Neo4jServiceDown: gone",
                          usage={"agent": Usage(calls=calls, prompt_tokens=100 * calls, completion_tokens=5)})


def shard(index: int, questions: list[QuestionRecord], *, started: str = "2026-12-07T10:00:00", run_id: str = "",
          settings: dict | None = None, commit: str = "abc", run: list[str] | None = None) -> RunRecord:
    usage: dict[str, Usage] = {}
    for q in questions:
        for role, u in q.usage.items():
            usage[role] = usage[role] + u if role in usage else u.model_copy()
    return RunRecord(run_id=run_id or f"run{index}", started=started, finished=started, commit=commit,
                     data_revision="rev", mode="full", tier="100K", models={"agent": "m"}, system="graphrag",
                     settings={**SETTINGS, "shard": f"{index}/2", **(settings or {})}, questions=questions,
                     usage=usage, exit_status=0,
                     shard=ShardInfo(index=index, count=2, conversations=ASSIGNMENT[index - 1],
                                     assignment=ASSIGNMENT, run_questions=run or RUN))


def test_two_shards_make_one_run_every_question_once_usage_added_means_over_all():
    one = shard(1, [question(RUN[0]), question(RUN[1], "failed", 0.0)])
    two = shard(2, [question(RUN[2], "failed", 0.5), question(RUN[3])], started="2026-12-07T10:05:00")
    merged = merge_records([("b", two), ("a", one)], "merged")  # given in any order
    record = merged.record
    assert [q.id for q in record.questions] == RUN and merged.missing == [] and merged.notes == []
    assert record.usage["agent"].calls == 8 and record.usage["agent"].prompt_tokens == 800
    abilities, overall = aggregate(record.questions)  # computed over all the conversations, as one run
    assert record.overall == overall and record.abilities == abilities and overall.mean == pytest.approx(0.625)
    assert record.overall.interval is not None and record.overall.interval.clusters == 2
    assert record.merged_from == ["run1", "run2"] and record.shard is None and record.settings["shard"] is None
    assert record.partial is False and record.run_id == "merged"


def test_an_absent_shard_leaves_its_questions_named_and_the_record_partial():
    merged = merge_records([("a", shard(1, [question(RUN[0]), question(RUN[1])]))], "merged")
    assert merged.missing == RUN[2:]
    assert merged.record.partial is True
    assert merged.record.partial_reason == "shard 2/2 absent; 2 of the run's 4 items have no result"


@pytest.mark.parametrize(("change", "named"), [
    ({"settings": {"chunk_tokens": 500}}, "--beam-chunk-tokens is 500 there and 1000 in a"),
    ({"commit": "def"}, "the commit is 'def' there and 'abc' in a"),
    ({"settings": {"model": "other"}}, "--beam-model is 'other' there and 'm' in a"),
])
def test_records_that_are_not_shards_of_one_run_are_refused_naming_the_difference(change, named):
    one = shard(1, [question(RUN[0])])
    two = shard(2, [question(RUN[2])], started="2026-12-07T10:05:00", **change)
    with pytest.raises(MergeError, match=re.escape("b is not a shard of the same run as a: " + named)):
        merge_records([("a", one), ("b", two)], "merged")


def test_a_setting_a_shard_keeps_for_itself_may_differ():
    one = shard(1, [question(RUN[0])])
    two = shard(2, [question(RUN[2])], started="2026-12-07T10:05:00",
                settings={"results": "/elsewhere", "neo4j": "docker", "concurrency": 16, "max_calls": 99})
    assert merge_records([("a", one), ("b", two)], "merged").record.questions


def test_a_whole_run_and_other_selections_are_refused():
    whole = shard(1, [question(RUN[0])]).model_copy(update={"shard": None})
    with pytest.raises(MergeError, match="was not split"):
        merge_records([("a", whole)], "merged")
    two = shard(2, [question(RUN[2])], run=RUN[:3])
    with pytest.raises(MergeError, match="selected other questions than"):
        merge_records([("a", shard(1, [question(RUN[0])])), ("b", two)], "merged")


def test_an_error_re_run_later_is_taken_from_the_re_run_and_a_second_verdict_is_not():
    first = shard(1, [question(RUN[0], "error", None), question(RUN[1], "failed", 0.0)], run_id="first")
    again = shard(1, [question(RUN[0], "passed", 1.0), question(RUN[1], "passed", 1.0)], run_id="again",
                  started="2026-12-07T11:00:00", run=RUN[:2])  # --lf: the shard's failed and errored only
    two = shard(2, [question(RUN[2]), question(RUN[3])])
    merged = merge_records([("first", first), ("again", again), ("two", two)], "merged")
    by_id = {q.id: q for q in merged.record.questions}
    assert by_id[RUN[0]].outcome == "passed" and by_id[RUN[1]].score == 0.0  # the first verdict stands
    assert merged.notes == [f"{RUN[0]}: taken from again (error in first)",
                            f"{RUN[1]}: kept from first, where it has its first verdict; again's is not taken"]
    assert merged.record.usage["agent"].calls == 12  # every call paid, the re-run's two questions included

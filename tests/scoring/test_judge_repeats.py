"""Judge repeats (issue 17 point 4): every rubric item judged N times, the mean kept, agreement countable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_beam.data.records import ProbingQuestion
from pytest_beam.results.aggregate import judge_agreement
from pytest_beam.results.question_record import QuestionRecord
from pytest_beam.scoring import score_question
from pytest_beam.scoring.repeats import judge_repeatedly
from tests.scoring.scripted import question as scripted_question


class Reply:
    def __init__(self, text: str) -> None:
        self.text = text


class RepeatJudge:
    """Scores by (rubric item, repeat): the test says what each repeat replies."""

    def __init__(self, plan: dict[tuple[str, int], float]) -> None:
        self.plan = plan
        self.calls: list[tuple[str, int]] = []

    def chat(self, *, role: str, messages: list[dict[str, str]], max_tokens: Any = None, response_format: Any = None,
             repeat: int = 0, accept: Any = None) -> Reply:
        prompt = messages[-1]["content"]
        item = next(name for name, _ in self.plan if f"RUBRIC CRITERION (what to check): {name}" in prompt)
        self.calls.append((item, repeat))
        return Reply(json.dumps({"score": self.plan[(item, repeat)], "reason": f"repeat {repeat}"}))


def question(rubric: list[str]) -> ProbingQuestion:
    return scripted_question("information_extraction", rubric, text="What is the dog called?")


@pytest.mark.parametrize("mode", ["default", "omnimemeval"])
def test_three_runs_judge_every_item_three_times_and_score_the_mean(mode):
    plan = {("Biscuit", 0): 1.0, ("Biscuit", 1): 1.0, ("Biscuit", 2): 1.0,
            ("sister", 0): 1.0, ("sister", 1): 0.5, ("sister", 2): 0.0}
    judge = RepeatJudge(plan)
    score = score_question(question(["Biscuit", "sister"]), "Biscuit.", judge, mode, judge_runs=3)
    assert sorted(judge.calls) == sorted(plan)  # each item once per repeat, each repeat numbered
    biscuit, sister = score.items
    assert biscuit.repeats == [1.0, 1.0, 1.0] and biscuit.score == 1.0
    assert sister.repeats == [1.0, 0.5, 0.0] and sister.score == pytest.approx(0.5)
    assert score.score == pytest.approx(0.75) and score.judge_calls == 6
    assert sister.reason == "repeat 0"
    record = QuestionRecord(id=score.question_id, ability="information_extraction",
                            score=score.score, items=score.items)
    assert judge_agreement([record]) == 0.5 == record.judge_agreement  # Biscuit agreed in all three, sister not


def test_one_run_is_the_plain_judge():
    judge = RepeatJudge({("Biscuit", 0): 0.5})
    score = score_question(question(["Biscuit"]), "Biscuit.", judge, "upstream")
    assert judge.calls == [("Biscuit", 0)] and score.items[0].repeats == [] and score.score == 0.0
    with pytest.raises(ValueError, match="at least 1"):
        judge_repeatedly(lambda r: (None, set(), 1), 0)  # type: ignore[arg-type, return-value]


class RepeatAligner:
    """A yes/no judge that matches ``event X`` to X, except that from repeat 1 on it never says yes to C."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def chat(self, *, role: str, messages: list[dict[str, str]], max_tokens: Any = None, response_format: Any = None,
             repeat: int = 0, accept: Any = None) -> Reply:
        from tests.scoring.scripted import snippets

        event, line = snippets(messages)
        self.calls.append((event, line, repeat))
        same = line == f"event {event}" and not (repeat >= 1 and event == "C")
        return Reply("YES" if same else "NO")


# Reference A, B, C; the answer lists all three in order.
# Repeat 0 matches every line: precision = recall = 1, tau_b = 1, every profile scores 1.
# Repeat 1 leaves "event C" unmatched:
#   default: answer items A, B, "event C": precision 2/3, recall 2/3, f1 2/3; over the union
#     {A, B, C, event C} (missing ones ranked last) the reference ranks 1,2,3,4 and the answer
#     1,2,4,3: 5 concordant pairs, 1 discordant, tau_b = 4/6, tau_norm = 5/6; score 2/3 * 5/6 = 5/9
#   upstream: tau_norm alone = 5/6
#   omnimemeval: positions A=1, B=2, C absent: coverage 2/3, tau_b over the found pair = 1,
#     tau_norm 1; score 2/3
@pytest.mark.parametrize(("mode", "second"), [("default", 5 / 9), ("upstream", 5 / 6), ("omnimemeval", 2 / 3)])
def test_event_ordering_alignment_is_repeated_per_judge_run(mode, second):
    judge = RepeatAligner()
    q = scripted_question("event_ordering", ["A", "B", "C"])
    score = score_question(q, "event A\nevent B\nevent C", judge, mode, judge_runs=2)
    # each repeat asks the whole alignment again, as its own (cache-keyed) calls: A/A, B/B, C/C
    assert [c for c in judge.calls if c[2] == 0] == [("A", "event A", 0), ("B", "event B", 0), ("C", "event C", 0)]
    assert [c for c in judge.calls if c[2] == 1] == [("A", "event A", 1), ("B", "event B", 1), ("C", "event C", 1)]
    assert score.judge_calls == 6
    detail = score.event_detail
    assert detail.repeats == [pytest.approx(1.0), pytest.approx(second)]
    assert score.score == pytest.approx((1.0 + second) / 2)
    assert detail.repeat_alignments == [[0, 1, 2], [0, 1, None]]
    assert [m.event_index for m in detail.alignment] == [0, 1, 2]  # the detail shows the first repeat
    record = QuestionRecord(id=score.question_id, ability="event_ordering", score=score.score,
                            event_detail=detail.model_dump())
    assert record.judge_agreement == pytest.approx(2 / 3)  # lines A and B agreed, C did not
    assert judge_agreement([record]) == pytest.approx(2 / 3)


def test_one_judge_run_aligns_once_and_records_no_repeats():
    judge = RepeatAligner()
    score = score_question(scripted_question("event_ordering", ["A", "B", "C"]), "event A\nevent B\nevent C",
                           judge, "default")
    assert [c[2] for c in judge.calls] == [0, 0, 0] and score.score == 1.0
    assert score.event_detail.repeats == [] and score.event_detail.repeat_alignments == []

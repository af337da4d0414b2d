"""Judge repeats (issue 17 point 4): every rubric item judged N times, the mean kept, agreement countable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_beam.data.records import ProbingQuestion
from pytest_beam.results.aggregate import judge_agreement
from pytest_beam.results.schema import QuestionRecord
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
             repeat: int = 0) -> Reply:
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

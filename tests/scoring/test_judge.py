"""The rubric judge: item scores, the mean, parse errors, and the two modes."""

from __future__ import annotations

import json

import pytest

from pytest_beam.scoring import QuestionScore, score_question
from pytest_beam.scoring.judge import parse_judge_json
from pytest_beam.scoring.profiles import get_profile
from pytest_beam.scoring.prompts import JUDGE_PROMPT

from .scripted import judge_json, question, replies

RUBRIC = ("LLM response should state: 42", "LLM response should mention the blue car", "No apologies")
Q = question("information_extraction", RUBRIC, text="What was the answer and which car?")
ANSWER = "It was 42; the car was red."


def test_items_one_half_zero_give_mean_half():
    judge = replies(judge_json(1.0), judge_json(0.5), judge_json(0))
    result = score_question(Q, ANSWER, judge, "default")
    assert [i.score for i in result.items] == [1.0, 0.5, 0.0]
    assert result.score == pytest.approx(0.5)
    assert result.flags == []
    assert result.judge_calls == 3
    assert result.mode == "default"
    assert [i.rubric_item for i in result.items] == list(RUBRIC)
    assert all(i.parsed and i.reason == "because" for i in result.items)
    # one single user message per item, role "judge"
    for call in judge.calls:
        assert call.role == "judge"
        assert [m["role"] for m in call.messages] == ["user"]


def test_unparseable_reply_scores_zero_and_flags_parse_error():
    judge = replies(judge_json(1), "I think it deserves full marks.", judge_json(1))
    result = score_question(Q, ANSWER, judge, "default")
    assert [i.score for i in result.items] == [1.0, 0.0, 1.0]
    assert result.items[1].parsed is False
    assert result.items[1].reply == "I think it deserves full marks."
    assert result.flags == ["parse_error"]
    assert result.score == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps({"score": 0.7, "reason": "x"}),  # not one of 0 / 0.5 / 1
        json.dumps({"score": 2, "reason": "x"}),
        json.dumps({"score": -1, "reason": "x"}),
        json.dumps({"score": "high", "reason": "x"}),
        json.dumps({"score": True, "reason": "x"}),
        json.dumps({"score": None, "reason": "x"}),
        json.dumps({"reason": "no score key"}),
        json.dumps([1.0, "list, not an object"]),
        '{"score": 1.0, "reason": "unterminated',
        '{"score": NaN, "reason": "x"}',
        "score: 1",
    ],
)
def test_default_rejects_anything_but_0_half_1(reply):
    result = score_question(question("abstention", ["only item"]), ANSWER, replies(reply), "default")
    assert result.score == 0.0
    assert result.items[0].score == 0.0
    assert result.items[0].parsed is False
    assert result.flags == ["parse_error"]
    json.loads(result.model_dump_json())  # still JSON-able


def test_fenced_json_reply_parses():
    fenced = '```json\n{\n  "score": 1.0,\n  "reason": "states 42"\n}\n```'
    result = score_question(question("abstention", ["x"]), ANSWER, replies(fenced), "default")
    assert result.score == 1.0 and result.flags == [] and result.items[0].reason == "states 42"


def test_json_inside_prose_parses_like_upstream():
    reply = 'Here is my verdict: {"score": 0.5, "reason": "partly"} -- done.'
    assert parse_judge_json(reply) == {"score": 0.5, "reason": "partly"}
    result = score_question(question("abstention", ["x"]), ANSWER, replies(reply), "default")
    assert result.score == 0.5 and result.flags == []


@pytest.mark.parametrize(("given", "expected"), [("0.5", 0.5), ("1", 1.0), (" 1.0 ", 1.0), ("0", 0.0), (1, 1.0)])
def test_default_accepts_numeric_strings(given, expected):
    result = score_question(question("abstention", ["x"]), ANSWER, replies(judge_json(given)), "default")
    assert result.score == expected
    assert result.flags == []
    assert result.items[0].judge_score == given


def test_upstream_truncates_half_to_zero_and_leaves_question_literal():
    judge = replies(judge_json(1.0), judge_json(0.5), judge_json("0.5"))
    result = score_question(Q, ANSWER, judge, "upstream")
    assert [i.score for i in result.items] == [1.0, 0.0, 0.0]
    assert result.score == pytest.approx(1 / 3)
    assert result.mode == "upstream"
    assert result.flags == []
    for prompt, item in zip(judge.prompts, RUBRIC):
        assert "- QUESTION (what the user asked): <question>\n" in prompt
        assert Q.question not in prompt
        assert prompt == JUDGE_PROMPT.replace("<rubric_item>", item).replace("<llm_response>", ANSWER)


def test_default_fills_question():
    judge = replies(judge_json(1.0), judge_json(0.5), judge_json(0))
    score_question(Q, ANSWER, judge, "default")
    for prompt, item in zip(judge.prompts, RUBRIC):
        assert f"- QUESTION (what the user asked): {Q.question}\n" in prompt
        assert "<question>" not in prompt
        expected = (
            JUDGE_PROMPT.replace("<question>", Q.question)
            .replace("<rubric_item>", item)
            .replace("<llm_response>", ANSWER)
        )
        assert prompt == expected


def test_default_fill_is_single_pass_upstream_chained():
    # text put into one slot is not re-scanned in default mode; upstream's chained replace does it
    item = "mentions <llm_response>"
    answer = "I saw <question> and <rubric_item>"
    default = get_profile("default").fill_prompt("Q?", item, answer)
    assert "RUBRIC CRITERION (what to check): mentions <llm_response>\n" in default
    assert f"RESPONSE TO EVALUATE: {answer}\n" in default
    upstream = get_profile("upstream").fill_prompt("Q?", item, answer)
    assert f"RUBRIC CRITERION (what to check): mentions {answer}\n" in upstream


def test_upstream_unparseable_is_parse_error_not_a_repair_guess():
    result = score_question(question("abstention", ["x"]), ANSWER, replies("{'score': 1, 'reason': 'x'}"), "upstream")
    assert result.score == 0.0 and result.flags == ["parse_error"]


def test_upstream_keeps_out_of_range_scores_truncated_and_flags_them():
    judge = replies(judge_json(0.7), judge_json(1))
    result = score_question(question("abstention", ["a", "b"]), ANSWER, judge, "upstream")
    assert [i.score for i in result.items] == [0.0, 1.0]
    assert result.flags == ["score_out_of_range"]


@pytest.mark.parametrize("mode", ["default", "upstream"])
def test_judge_exception_propagates(mode):
    class Boom(Exception):
        pass

    judge = replies(judge_json(1), Boom("endpoint down"))
    with pytest.raises(Boom):
        score_question(Q, ANSWER, judge, mode)


@pytest.mark.parametrize("text", [None, "", "   \n"])
def test_reply_without_text_scores_zero_with_parse_error(text):
    result = score_question(question("abstention", ["x"]), ANSWER, replies(text), "default")
    assert result.score == 0.0 and result.flags == ["parse_error"] and not result.items[0].parsed


def test_question_score_is_json_able_and_round_trips():
    judge = replies(judge_json(1.0), "garbage", judge_json("0.5"))
    result = score_question(Q, ANSWER, judge, "default")
    data = json.loads(result.model_dump_json())
    assert data["question_id"] == Q.id == "conv1:information_extraction:0"
    assert data["ability"] == "information_extraction"
    assert data["mode"] == "default"
    assert data["flags"] == ["parse_error"]
    assert data["event_f1"] is None and data["event_detail"] is None
    assert QuestionScore.model_validate(data) == result


def test_empty_rubric_and_unknown_mode_are_errors():
    with pytest.raises(ValueError):
        score_question(question("abstention", []), ANSWER, replies(), "default")
    with pytest.raises(ValueError):
        score_question(Q, ANSWER, replies(), "strict")  # type: ignore[arg-type]


def test_nested_or_preceded_json_parses_with_the_one_parser():
    # upstream's non-greedy regex reads neither (its json_repair fallback would); the one parser does
    nested = 'Verdict: {"score": 1, "reason": {"why": "states 42"}}'
    stray = 'The {answer} is fine. {"score": 0.5, "reason": "partly"}'
    assert parse_judge_json(nested) == {"score": 1, "reason": {"why": "states 42"}}
    assert parse_judge_json(stray)["score"] == 0.5
    with pytest.raises(ValueError):
        parse_judge_json("score: 1")

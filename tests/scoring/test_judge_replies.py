"""Issue 15 point 12: a judge reply cut off by its token cap, and an empty judge reply.

Real parts: the scripted HTTP model server behind the real model client; the prompts are BEAM's.
"""

from __future__ import annotations

import pytest

from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
from pytest_beam.scoring import score_question
from pytest_beam.scoring.judge import CLASSIFIER_MAX_TOKENS, JUDGE_MAX_TOKENS, TRUNCATED_RETRY_FACTOR
from tests.model_server import Reply

from .scripted import ScriptedJudge, question

ANSWER = "The answer is 42 and the car was blue."


@pytest.fixture
def judge(model_server):
    client = ModelClient(EndpointConfig(base_url=model_server.base_url, backoff_base_s=0.001, timeout_s=5),
                         RoleModels(agent="agent-model", judge="judge-model"))
    yield client
    client.close()


def test_a_cut_off_reply_is_flagged_and_asked_again_with_a_larger_cap(model_server, judge):
    model_server.script(Reply.say('{"score": 1, "reason": "The response states 42 and', finish_reason="length"),
                        Reply.say('{"score": 1, "reason": "states 42"}'))
    result = score_question(question("abstention", ["states 42"]), ANSWER, judge, "default")
    assert result.score == 1.0 and result.items[0].parsed
    assert result.flags == ["judge_truncated"]
    assert result.judge_calls == 2
    caps = [r.body["max_tokens"] for r in model_server.chat_requests]
    assert caps == [JUDGE_MAX_TOKENS, JUDGE_MAX_TOKENS * TRUNCATED_RETRY_FACTOR]
    assert model_server.chat_requests[0].messages == model_server.chat_requests[1].messages  # same prompt


def test_cut_off_twice_scores_what_parses_and_stops(model_server, judge):
    cut = Reply.say('{"score": 1, "reason": "The response', finish_reason="length")
    model_server.script(cut, cut)
    result = score_question(question("abstention", ["states 42"]), ANSWER, judge, "default")
    assert result.score == 0.0 and result.flags == ["judge_truncated", "parse_error"]
    assert result.judge_calls == 2 and model_server.request_count == 2  # one retry only


@pytest.mark.parametrize("mode", ["default", "upstream"])
def test_an_empty_reply_scores_the_item_zero_with_parse_error(model_server, judge, mode):
    model_server.script(Reply.say('{"score": 1, "reason": "ok"}'), Reply.say(""), Reply.say("  \n"))
    result = score_question(question("abstention", ["a", "b", "c"]), ANSWER, judge, mode)
    assert [i.score for i in result.items] == [1.0, 0.0, 0.0]
    assert [i.parsed for i in result.items] == [True, False, False]
    assert result.flags == ["parse_error"] and result.score == pytest.approx(1 / 3)


def test_a_reply_with_no_text_at_all_scores_zero_with_parse_error():
    judge = ScriptedJudge(lambda messages: None)
    result = score_question(question("abstention", ["a"]), ANSWER, judge, "default")
    assert result.score == 0.0 and result.flags == ["parse_error"] and result.items[0].reply == ""


def test_classifier_reply_without_text_is_no_match_with_parse_error():
    judge = ScriptedJudge(lambda messages: None)
    result = score_question(question("event_ordering", ("A", "B")), "event A", judge, "default")
    assert all(m.event is None for m in result.event_detail.alignment)
    assert "parse_error" in result.flags


def test_a_cut_off_classifier_reply_is_asked_again_only_when_undecided(model_server, judge):
    model_server.script(
        Reply.say("Yes, both snippets describe", finish_reason="length"),  # decided: no retry
        Reply.say("Both snippets talk about the", finish_reason="length"),  # undecided: retried
        Reply.say("No."),
    )
    result = score_question(question("event_ordering", ("A", "B")), "line one\nline two", judge, "default")
    assert [m.event for m in result.event_detail.alignment] == ["A", None]
    assert result.judge_calls == 3 and "judge_truncated" in result.flags
    caps = [r.body["max_tokens"] for r in model_server.chat_requests]
    assert caps == [CLASSIFIER_MAX_TOKENS, CLASSIFIER_MAX_TOKENS, CLASSIFIER_MAX_TOKENS * TRUNCATED_RETRY_FACTOR]


# ---- issue 16 point 2: BEAM's verdict asked for as a JSON schema, text parsing as the fallback

def test_the_judge_asks_for_beams_verdict_as_a_json_schema_with_the_prompt_unchanged(model_server, judge):
    from pytest_beam.scoring.judge import JUDGE_FORMAT, fill_question_and_answer

    model_server.script(Reply.say('{"score": 1.0, "reason": "states 42"}'))
    scored = score_question(question("information_extraction", ["mentions 42"]), ANSWER, judge, mode="default")
    sent = model_server.last_request.body
    assert sent["response_format"] == JUDGE_FORMAT
    assert JUDGE_FORMAT["json_schema"]["schema"]["properties"]["score"]["enum"] == [1.0, 0.5, 0.0]
    assert sent["messages"] == [{"role": "user", "content": fill_question_and_answer(
        "What happened, in order?", "mentions 42", ANSWER)}]
    assert scored.score == 1.0 and [i.reply_format for i in scored.items] == ["json_schema"]


def test_an_endpoint_refusing_the_schema_is_judged_from_text_and_the_record_says_so(model_server_factory):
    server = model_server_factory(supports_json_schema=False)
    server.script(Reply.say('Verdict: {"score": 0.5, "reason": "partly"}'), Reply.say('{"score": 0, "reason": "no"}'))
    client = ModelClient(EndpointConfig(base_url=server.base_url, backoff_base_s=0.001, timeout_s=5),
                         RoleModels(agent="agent-model", judge="judge-model"))
    try:
        scored = score_question(question("information_extraction", ["a", "b"]), ANSWER, client, mode="default")
    finally:
        client.close()
    assert [i.score for i in scored.items] == [0.5, 0.0] and scored.flags == []
    assert [i.reply_format for i in scored.items] == ["text", "text"]
    assert [("response_format" in r.body) for r in server.chat_requests] == [True, False, False]


def test_the_event_alignment_asks_for_yes_or_no_as_a_json_schema(model_server, judge):
    from pytest_beam.scoring.judge import CLASSIFIER_FORMAT
    from pytest_beam.scoring.prompts import binary_classifier_messages

    model_server.script(Reply.say('{"answer": "NO"}'), Reply.say('{"answer": "YES"}'), Reply.say('{"answer": "YES"}'))
    scored = score_question(
        question("event_ordering", ["first", "second"]), "1. second\n2. first", judge, mode="default"
    )
    bodies = [r.body for r in model_server.chat_requests]
    assert [b["response_format"] for b in bodies] == [CLASSIFIER_FORMAT] * 3
    assert bodies[0]["messages"] == binary_classifier_messages("first", "1. second")
    alignment = scored.event_detail.alignment
    assert [m.event_index for m in alignment] == [1, 0]
    assert [m.reply_formats for m in alignment] == [["json_schema", "json_schema"], ["json_schema"]]

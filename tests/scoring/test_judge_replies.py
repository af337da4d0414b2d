"""Issue 15 point 12: an empty judge reply scores its item 0 and flags parse_error.

Real parts: the scripted HTTP model server behind the real model client; the prompts are BEAM's.
"""

from __future__ import annotations

import pytest

from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
from pytest_beam.scoring import score_question
from tests.model_server import Reply, model_server  # noqa: F401

from .scripted import ScriptedJudge, question

ANSWER = "The answer is 42 and the car was blue."


@pytest.fixture
def judge(model_server):
    client = ModelClient(EndpointConfig(base_url=model_server.base_url, backoff_base_s=0.001, timeout_s=5),
                         RoleModels(agent="agent-model", judge="judge-model"))
    yield client
    client.close()


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

"""Live: the embedded model's event-alignment replies, asked through their schema, parse.

Issue 16 point 2 measured on the real model (Qwen2.5-Coder-1.5B under llama.cpp's server, 2 cores):
the prompts are BEAM's, word for word; the reply is asked for as a json_schema response_format.
The rubric verdicts on right and wrong answers to the lite questions are the README's first
command's (its questions' items and its judge check's cases: tests/live/test_live_lite.py asserts
every one parsed); what the lite set never asks is event ordering, so this asks one alignment.
The replies are printed (run with -s) for the record; the test asserts that they parsed.
"""

from __future__ import annotations

import json

import pytest

from pytest_beam.llm import embedded

_REASON = embedded.unavailable_reason()

pytestmark = [
    pytest.mark.live_model,
    pytest.mark.skipif(_REASON is not None, reason=f"embedded model not installed: {_REASON}"),
]


@pytest.fixture(scope="module")
def judge(embedded_model):
    from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels

    client = ModelClient(EndpointConfig(base_url=embedded_model.base_url, api_key=embedded_model.api_key,
                                        timeout_s=900, max_retries=0), RoleModels(agent=embedded_model.model_name))
    yield client
    client.close()


def test_the_embedded_judges_event_alignment_replies_parse(judge):
    """One event-alignment call: few calls, as a loaded 2-core machine makes each take a minute or more."""
    from pytest_beam.data.records import ProbingQuestion
    from pytest_beam.scoring import score_question

    events = ProbingQuestion(conversation_id="17", ability="event_ordering", index=0, question="In what order?",
                             rubric=("I enrolled the kids in soccer",), source_message_ids=())
    ordered = score_question(events, "I signed the kids up for soccer", judge, mode="default")
    alignment = ordered.event_detail.alignment
    print(f"\nevent alignment: {[(m.event_index, m.replies, m.reply_formats) for m in alignment]}", flush=True)

    assert "parse_error" not in ordered.flags
    replies = [r for m in alignment for r in m.replies]
    assert [f for m in alignment for f in m.reply_formats] == ["json_schema"]
    assert all(json.loads(r) in ({"answer": "YES"}, {"answer": "NO"}) for r in replies), replies  # any whitespace

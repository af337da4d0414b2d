"""Live: the embedded model judges lite items through BEAM's verdict schema, and every reply parses.

Issue 16 point 2 measured on the real model (Qwen2.5-Coder-1.5B under llama-server, 2 cores): the
judge's prompt is BEAM's, word for word; the reply is asked for as a json_schema response_format.
A right and a wrong answer to each lite question, and one event alignment. The numbers are printed
(run with -s) for the record; the test asserts that every reply parsed, not what the model thinks.
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

QUESTION = "conv17:information_extraction:0"  # its rubric: "on Tuesdays and Thursdays"
ANSWERS = {"right": "Your kids have their afterschool activities on Tuesdays and Thursdays.",
           "wrong": "You never told me about afterschool activities."}


@pytest.fixture(scope="module")
def judge():
    from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
    from pytest_beam.llm.embedded import EmbeddedModel

    with EmbeddedModel() as model:
        client = ModelClient(EndpointConfig(base_url=model.base_url, api_key=model.api_key, timeout_s=900,
                                            max_retries=0), RoleModels(agent=model.model_name))
        yield client
        client.close()


def test_the_embedded_judge_gives_parseable_verdicts_on_lite_items(judge, beam_data_dir):
    """A right and a wrong answer to a lite question, and one event-alignment call: few calls, as
    a loaded 2-core machine makes each take a minute or more."""
    from pytest_beam.data.records import ProbingQuestion
    from pytest_beam.data.sets import load_set
    from pytest_beam.scoring import score_question

    question = next(q for q in load_set("lite", beam_data_dir).questions if q.id == QUESTION)
    scored = {}
    for kind, answer in ANSWERS.items():
        scored[kind] = score = score_question(question, answer, judge, mode="default")
        print(f"\n{question.id} {kind}: score {score.score} items "
              f"{[(i.judge_score, i.reply_format, i.parsed) for i in score.items]} flags {score.flags}", flush=True)
    events = ProbingQuestion(conversation_id="17", ability="event_ordering", index=0, question="In what order?",
                             rubric=("I enrolled the kids in soccer",), source_message_ids=())
    ordered = score_question(events, "I signed the kids up for soccer", judge, mode="default")
    alignment = ordered.event_detail.alignment
    print(f"\nevent alignment: {[(m.event_index, m.replies, m.reply_formats) for m in alignment]}", flush=True)

    items = [i for score in scored.values() for i in score.items]
    assert len(items) == 2
    assert all(i.parsed and i.reply_format == "json_schema" for i in items), [i.reply for i in items]
    assert not any("parse_error" in s.flags for s in [*scored.values(), ordered])
    replies = [r for m in alignment for r in m.replies]
    assert [f for m in alignment for f in m.reply_formats] == ["json_schema"]
    assert all(json.loads(r) in ({"answer": "YES"}, {"answer": "NO"}) for r in replies), replies  # any whitespace

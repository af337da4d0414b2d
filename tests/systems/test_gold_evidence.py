"""gold-evidence puts exactly the question's source messages in front of the model, nothing else."""

from __future__ import annotations

import pytest

from pytest_beam.systems import is_measurement_aid, make_system
from pytest_beam.systems.answering import NO_MESSAGES
from pytest_beam.systems.gold_evidence import FLAG_MEASUREMENT_AID, GoldEvidenceCeiling, gold_evidence_lookup
from tests.model_server import Reply
from tests.systems.conftest import sent_prompt

ANSWER = "scripted answer"


def _ceiling(conv17, make_context):
    system = make_system("gold-evidence", make_context(gold_evidence=gold_evidence_lookup(conv17.questions)))
    system.ingest(conv17.documents)
    return system


@pytest.mark.parametrize("ability,index", [("summarization", 1), ("event_ordering", 0),
                                           ("information_extraction", 0)])
def test_exactly_the_source_messages_are_sent(conv17, make_context, model_server, ability, index):
    question = conv17.question(ability, index)
    sources = sorted(question.source_message_ids)
    model_server.script(Reply.say(ANSWER))

    answer = _ceiling(conv17, make_context).answer(question.for_system())

    system, user, shown = sent_prompt(model_server)
    assert shown == sources  # every source once, in chat order, and no other message header
    by_id = {m.id: m for m in conv17.messages}
    for mid in sources:
        assert by_id[mid].text in system
    others = [m for m in conv17.messages if m.id not in sources and len(m.text) > 40]
    assert len(others) > 200
    assert not [m.id for m in others if m.text in system]  # no other message's text leaks in
    assert user == question.question
    assert answer.text == ANSWER and answer.retrieved_message_ids == set(sources)
    assert FLAG_MEASUREMENT_AID in answer.flags and answer.trace[0]["measurement_aid"] is True
    assert answer.trace[0]["message_ids"] == sources and answer.trace[0]["sources_not_ingested"] == []
    assert answer.context_tokens == answer.trace[0]["context_tokens"] > 0


def test_abstention_sends_no_message(conv17, make_context, model_server):
    question = conv17.question("abstention", 0)
    assert question.source_message_ids == ()
    model_server.script(Reply.say("The conversation does not say."))

    answer = _ceiling(conv17, make_context).answer(question.for_system())

    system, user, shown = sent_prompt(model_server)
    assert shown == [] and system.endswith(NO_MESSAGES) and user == question.question
    assert answer.retrieved_message_ids == set() and answer.flags == [FLAG_MEASUREMENT_AID]


def test_only_a_measurement_aid_and_only_with_the_lookup(make_context):
    assert GoldEvidenceCeiling.measurement_aid is True and is_measurement_aid("gold-evidence")
    assert "measurement aid" in (GoldEvidenceCeiling.__doc__ or "").lower()
    with pytest.raises(RuntimeError, match="measurement aid"):
        make_system("gold-evidence", make_context())


def test_lookup_refuses_an_unknown_question(conv17):
    lookup = gold_evidence_lookup(conv17.questions)
    assert lookup(conv17.question("knowledge_update", 0).system_id) == (122, 134)
    with pytest.raises(KeyError, match="conv17:knowledge_update:0"):
        lookup("conv17:knowledge_update:0")  # the ability-naming id is never what a system sees
    with pytest.raises(KeyError, match="conv17:nope:0"):
        lookup("conv17:nope:0")

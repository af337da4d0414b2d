"""The shared answering helper: how a message is shown, what an empty reply means."""

from __future__ import annotations

import datetime as dt

from pytest_beam.data.records import Document, Message, SystemQuestion
from pytest_beam.system import FLAG_AGENT_FAILURE
from pytest_beam.systems.answering import (
    ChatMessage,
    answer_from_messages,
    chat_messages,
    render_message,
)
from tests.model_server import Reply
from tests.systems.conftest import sent_prompt

QUESTION = SystemQuestion(id="conv0:x:0", conversation_id="0", question="Where is the user moving?")


def _doc(session: int, ids: list[int]) -> Document:
    return Document(conversation_id="0", name=f"session-{session}", session_number=session,
                    session_date=dt.date(2024, 3, session), messages=tuple(
                        Message(id=i, role="user" if i % 2 == 0 else "assistant", text=f"text {i}") for i in ids))


def test_a_message_shows_its_id_session_date_and_role():
    shown = render_message(ChatMessage(12, "user", "Moving to Lisbon.", 3, dt.date(2024, 3, 15)))
    assert shown == "### message 12 | session 3 | 2024-03-15 | user\nMoving to Lisbon."
    assert render_message(ChatMessage(1, "assistant", "ok", 1, None)).startswith(
        "### message 1 | session 1 | undated |"
    )


def test_messages_are_taken_once_in_chat_order():
    got = chat_messages([_doc(2, [5, 6]), _doc(1, [0, 1]), _doc(2, [6, 7])])
    assert [(m.id, m.session) for m in got] == [(0, 1), (1, 1), (5, 2), (6, 2), (7, 2)]


def test_an_empty_reply_is_no_answer(models, model_server):
    model_server.script(Reply.say(""))
    messages = chat_messages([_doc(1, [0, 1, 2])])
    answer = answer_from_messages(models, QUESTION, [messages[2], messages[0]], system="test", budget=10_000)

    _, user, shown = sent_prompt(model_server)
    assert shown == [0, 2] and user == QUESTION.question
    assert answer.text == "" and answer.flags == [FLAG_AGENT_FAILURE] and answer.gave_no_answer
    assert answer.retrieved_message_ids == {0, 2}
    assert [s["type"] for s in answer.trace] == ["note", "model"] and answer.steps == 1


def test_a_budget_below_the_instructions_sends_no_message(models, model_server):
    model_server.script(Reply.say("cannot tell"))
    messages = chat_messages([_doc(1, [0, 1])])
    answer = answer_from_messages(models, QUESTION, messages, system="test", budget=50)

    assert sent_prompt(model_server)[2] == [] and answer.retrieved_message_ids == set()
    assert answer.trace[0]["dropped_for_budget"] == 2

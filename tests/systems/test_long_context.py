"""long-context sends the chat, keeps the newest messages that fit its budget, counts what it sent."""

from __future__ import annotations

from pytest_beam.memory.tokens import count_tokens
from pytest_beam.systems import make_system
from pytest_beam.systems.answering import DEFAULT_CONTEXT_TOKENS, build_prompt, chat_messages
from tests.model_server import Reply
from tests.systems.conftest import request_tokens, sent_prompt


def _ask(conv17, make_context, model_server, **settings):
    model_server.script(Reply.say("scripted answer"))
    system = make_system("long-context", make_context(**settings))
    system.ingest(conv17.documents)
    return system, system.answer(conv17.question("knowledge_update", 0).for_system())


def test_a_small_budget_keeps_only_the_newest_messages(conv17, make_context, model_server):
    budget = 6000
    _, answer = _ask(conv17, make_context, model_server, context_tokens=budget)

    _system, _, shown = sent_prompt(model_server)
    ids = sorted(m.id for m in conv17.messages)
    newest = ids[-1]
    assert newest in shown and shown == sorted(shown)
    assert shown == ids[-len(shown):]  # a contiguous newest stretch: the oldest went first
    assert 3 <= len(shown) < len(ids) // 4
    sent = request_tokens(model_server)
    assert answer.context_tokens == sent == answer.trace[0]["context_tokens"] and sent <= budget
    # maximal: one more (older) message would not have fitted
    messages = chat_messages(conv17.documents)
    one_more = [m for m in messages if m.id >= ids[-len(shown) - 1]]
    question = conv17.question("knowledge_update", 0).question
    assert sum(count_tokens(p["content"]) for p in build_prompt(one_more, question)) > budget
    assert answer.retrieved_message_ids == set(shown)
    assert answer.trace[0]["dropped_for_budget"] == len(ids) - len(shown)


def test_the_default_budget_drops_the_oldest_of_conversation_17(conv17, make_context, model_server):
    # conversation 17's messages alone are about 122k tokens: more than the 120k default
    assert sum(count_tokens(m.text) for m in conv17.messages) > DEFAULT_CONTEXT_TOKENS
    system, answer = _ask(conv17, make_context, model_server)

    assert system.budget == DEFAULT_CONTEXT_TOKENS
    _, _, shown = sent_prompt(model_server)
    ids = sorted(m.id for m in conv17.messages)
    assert 0 not in shown and shown == ids[-len(shown):] and len(shown) > len(ids) * 3 // 4
    assert request_tokens(model_server) == answer.context_tokens <= DEFAULT_CONTEXT_TOKENS
    assert answer.context_tokens > DEFAULT_CONTEXT_TOKENS - 2000  # filled, not merely under


def test_a_budget_that_holds_the_chat_sends_all_of_it_in_order(conv17, make_context, model_server):
    _, answer = _ask(conv17, make_context, model_server, context_tokens=1_000_000)

    system, _, shown = sent_prompt(model_server)
    assert shown == sorted(m.id for m in conv17.messages)
    assert all(m.text in system for m in conv17.messages)
    assert answer.trace[0]["dropped_for_budget"] == 0 and answer.context_tokens == request_tokens(model_server)

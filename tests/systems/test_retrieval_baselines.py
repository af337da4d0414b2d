"""bm25 and dense: the top-k expected for crafted queries, and exactly those messages are sent."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from pytest_beam.data.records import SystemQuestion
from pytest_beam.systems import make_system
from tests.model_server import Reply
from tests.systems.conftest import request_tokens, sent_prompt


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{9,}", text.lower())}


def _rare_phrase(messages) -> tuple[int, str]:
    """A message (the first from id 100 on) and three long words that occur in no other message."""
    counts = Counter(w for m in messages for w in _words(m.text))
    for m in sorted(messages, key=lambda m: m.id):
        unique = sorted(w for w in _words(m.text) if counts[w] == 1)
        if m.id >= 100 and len(unique) >= 3:
            return m.id, " ".join(unique[:3])
    raise AssertionError("no message with three words of its own")


def _question(text: str) -> SystemQuestion:
    return SystemQuestion(id="conv17:crafted:0", conversation_id="17", question=text)


def test_bm25_ranks_the_message_holding_a_rare_phrase_first(conv17, make_context, model_server):
    target, phrase = _rare_phrase(conv17.messages)
    model_server.script(Reply.say("scripted answer"))
    system = make_system("bm25", make_context())
    system.ingest(conv17.documents)

    hits = system.retrieve(phrase)
    assert hits[0][0].id == target and hits[0][1] > 0
    # every other message matches none of the phrase's words: at most the target scores above 0
    assert [m.id for m, _ in hits] == [target]

    answer = system.answer(_question(phrase))
    _, user, shown = sent_prompt(model_server)
    assert shown == [target] and user == phrase and answer.retrieved_message_ids == {target}


def test_bm25_sends_its_top_k_best_first_and_nothing_else(conv17, make_context, model_server):
    question = conv17.question("information_extraction", 1)
    model_server.script(Reply.say("scripted answer"))
    system = make_system("bm25", make_context(retrieval_k=7))
    system.ingest(conv17.documents)

    hits = system.retrieve(question.question)
    scores = [s for _, s in hits]
    assert system.k == 7 and len(hits) == 7 and scores == sorted(scores, reverse=True) and scores[-1] > 0
    all_scores = system.index.scores(question.question)
    assert min(scores) >= sorted(all_scores, reverse=True)[6]  # these are the seven best of all 286

    answer = system.answer(question.for_system())
    _, _, shown = sent_prompt(model_server)
    assert shown == sorted(m.id for m, _ in hits)
    assert answer.retrieved_message_ids == set(shown)
    assert [r["id"] for r in answer.trace[0]["ranking"]] == [m.id for m, _ in hits]
    assert answer.context_tokens == request_tokens(model_server)


@pytest.fixture(scope="module")
def embedder():
    from pytest_beam.memory.embeddings import make_embedder

    return make_embedder("local")


def test_dense_ranks_by_the_builtin_embedder_and_sends_its_top_k(conv17, make_context, model_server, embedder):
    from pytest_beam.memory.ingest import message_embedding_text

    model_server.script(Reply.say("scripted answer"))
    system = make_system("dense", make_context())
    system.ingest(conv17.documents)
    assert system.k == 10 and system.embedder.name == embedder.name

    # a message's own embedded text is nearest to itself
    target = next(m for m in conv17.messages if m.id == 150)
    hits = system.retrieve(message_embedding_text(target.text))
    assert hits[0][0].id == 150 and hits[0][1] > 0.99

    # messages are embedded as ingest embeds them (checked on a sample: embedding is the costly part)
    sample = [0, 57, 150, 285]
    again = embedder.embed([message_embedding_text(conv17.messages[i].text) for i in sample])
    assert np.allclose(system.vectors[sample], np.asarray(again), atol=1e-5)

    # the top 10 for a real question equal a brute-force ranking made here
    question = conv17.question("knowledge_update", 0)
    vectors = np.asarray(system.vectors)
    query = np.asarray(embedder.embed([question.question])[0])
    expected = [conv17.messages[i].id for i in np.argsort(-(vectors @ query), kind="stable")[:10]]
    hits = system.retrieve(question.question)
    assert [m.id for m, _ in hits] == expected

    answer = system.answer(question.for_system())
    _, _, shown = sent_prompt(model_server)
    assert shown == sorted(expected) and answer.retrieved_message_ids == set(expected)
    assert answer.context_tokens == request_tokens(model_server) and answer.trace[0]["k"] == 10

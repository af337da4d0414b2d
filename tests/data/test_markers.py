"""Leakage guard (issue 17 point 6): plan markers stripped, the ability never given to a system."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from pytest_beam.data.data_error import BeamDataError
from pytest_beam.data.markers import strip_document, strip_plan_marker
from pytest_beam.data.records import ABILITIES, Document, Message
from pytest_beam.data.sets import ALL_CONVERSATIONS, load_set
from pytest_beam.setting_sources import resolve

# every shape found in the 100K split's 20 conversations (data/markers.py has the survey)
VARIANTS = [
    ("I meet my deadlines by then? ->-> 1,1", "I meet my deadlines by then?"),  # 2,190 of these
    ("help me evaluate my approach ->-> 5,14)", "help me evaluate my approach"),  # 6
    ("use it to create Messagepack ->-> 2,N/A", "use it to create Messagepack"),  # 1
    ("concept related to probability? ->->  3,8", "concept related to probability?"),  # 1
    ("WillMaker Pro to draft my will? ->-> 2,22, 24", "WillMaker Pro to draft my will?"),  # 1
]


@pytest.mark.parametrize(("raw", "clean"), VARIANTS)
def test_each_surveyed_marker_shape_is_stripped(raw, clean):
    assert strip_plan_marker(raw) == clean


def test_text_without_a_marker_is_unchanged():
    text = "A reply with an arrow -> and a pair 1,4 in the middle.\n"
    assert strip_plan_marker(text) is text or strip_plan_marker(text) == text
    assert strip_plan_marker("two lines\nno marker ->") == "two lines\nno marker ->"


@pytest.mark.parametrize("raw", ["marker in the middle ->-> 1,4 and more text", "odd ->-> a,b",
                                 "two markers ->-> 1,2 ->-> 1,3", "newline after ->-> 1,2\nmore"])
def test_an_unknown_marker_shape_raises_rather_than_half_stripping(raw):
    with pytest.raises(ValueError, match="unknown shape"):
        strip_plan_marker(raw)


def test_a_document_error_names_conversation_and_message():
    doc = Document(conversation_id="9", name="session-1", session_number=1, session_date=None,
                   messages=(Message(id=0, role="user", text="ok ->-> 1,1"),
                             Message(id=1, role="user", text="bad ->-> x")))
    with pytest.raises(BeamDataError, match="conversation 9, message 1"):
        strip_document(doc)


def _marker_counts(bench) -> Counter:
    return Counter((cid, m.role) for cid, docs in bench.documents.items() for d in docs for m in d.messages
                   if "->->" in m.text)


@pytest.fixture(scope="module")
def raw_complete(beam_data_dir):
    return load_set("complete", beam_data_dir, keep_markers=True)


@pytest.fixture(scope="module")
def complete(beam_data_dir):
    return load_set("complete", beam_data_dir)


def test_no_marker_remains_in_any_conversation_once_stripped(raw_complete, complete):
    raw = _marker_counts(raw_complete)
    # the survey's numbers, so the test fails if the data or the default changes
    assert sum(raw.values()) == 2199
    assert sum(n for (_, role), n in raw.items() if role == "user") == 2155
    assert {cid for (cid, role) in raw if role == "assistant"} == {"5"}
    per_conversation = Counter()
    for (cid, _), n in raw.items():
        per_conversation[cid] += n
    assert min(per_conversation.values()) == 78 and max(per_conversation.values()) == 146
    assert set(per_conversation) == set(ALL_CONVERSATIONS)
    assert _marker_counts(complete) == Counter()
    for cid in ALL_CONVERSATIONS:
        for before, after in zip(raw_complete.documents[cid], complete.documents[cid]):
            for m_raw, m in zip(before.messages, after.messages):
                assert m.id == m_raw.id and m.role == m_raw.role
                assert m.text == m_raw.text or (m_raw.text.startswith(m.text) and "->->" in m_raw.text[len(m.text):])


def test_lite_set_is_stripped_too_and_its_pins_still_hold(beam_data_dir):
    raw = load_set("lite", beam_data_dir, keep_markers=True)
    clean = load_set("lite", beam_data_dir)
    assert sum(_marker_counts(raw).values()) >= 1
    assert _marker_counts(clean) == Counter()


def test_the_system_never_learns_the_question_ability(complete):
    seen = set()
    for question in complete.questions:
        shown = question.for_system()
        dumped = json.dumps(shown.model_dump())
        for ability in ABILITIES:
            assert ability not in dumped, (question.id, dumped)
        assert shown.model_dump() == {"id": question.system_id, "conversation_id": question.conversation_id,
                                      "question": question.question}
        assert re.fullmatch(rf"conv{question.conversation_id}:q-[0-9a-f]{{12}}", shown.id)
        seen.add(shown.id)
    assert len(seen) == 400  # distinct: a system may still key its own state on the id
    assert [q.id for q in complete.system_questions()] == [q.system_id for q in complete.questions]


def _settings(**flags):
    return resolve(lambda name: flags.get(name), lambda name: None, environ={})


def test_markers_setting_defaults_to_strip_and_is_recorded():
    assert _settings().keep_markers is False
    assert _settings().public_dict()["keep_markers"] is False
    assert _settings(keep_markers=True).public_dict()["keep_markers"] is True
    assert resolve(lambda n: None, lambda n: None, environ={"BEAM_KEEP_MARKERS": "1"}).keep_markers is True

"""Question intent, topic words and standing-rule cues: pure functions, no graph (issue 27)."""

from __future__ import annotations

import pytest

from pytest_beam.memory.message_cues import message_cue
from pytest_beam.memory.query_intent import question_intent, topic_words

ORDERING = ("Can you list the order in which I brought up different aspects of developing my personal "
            "budget tracker throughout our conversations, in order? Mention ONLY and ONLY three items.")
SUMMARY = ("Can you give me a comprehensive summary of how I handled the security and database challenges "
           "in my budget tracker app across our discussions?")


@pytest.mark.parametrize("question, intent", [
    (ORDERING, "ordering"),
    ("In what order did I visit the three cities?", "ordering"),
    (SUMMARY, "summary"),
    ("Can you summarize how my reading goals have developed over time?", "summary"),
    ("When does my first sprint end?", "plain"),
    ("Have I ever met Kelly at any book club or library event?", "plain"),
])
def test_question_intent(question, intent):
    assert question_intent(question) == intent


def test_topic_words_keep_the_topic_and_drop_the_framing():
    assert topic_words(ORDERING) == "developing my personal budget tracker"
    assert topic_words(SUMMARY) == "how I handled the security and database challenges in my budget tracker app"
    assert topic_words("When does my first sprint end?") == "When does my first sprint end"
    framing_only = "Can you summarize throughout our conversations, in order?"
    assert topic_words(framing_only) == framing_only  # nothing but framing: unchanged


@pytest.mark.parametrize("text, role, cue", [
    ("Always format dates in MM/DD/YYYY when I ask about scheduling details.", "user", "instruction"),
    ("Please always answer me in bullet points from now on.", "user", "instruction"),
    ("Never include code in your answers about cooking.", "user", "instruction"),
    ("I prefer e-books for their portability, can you help me balance that?", "user", "preference"),
    ("I'm considering video samples in my portfolio like I prefer.", "user", "preference"),
    ("Always remember to back up your database.", "assistant", None),  # an assistant sets no rule
    ("When does my first sprint end? It is always busy.", "user", None),
    ("", "user", None),
])
def test_message_cue(text, role, cue):
    assert message_cue(text, role) == cue

"""The data's known defects on every tier the copy holds (issue 26 point 4): runaway messages
repaired under pinned hashes, the generator's markers in all their shapes, rubric defects flagged
with reasons. None hidden: the survey finds exactly what is handled."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from pytest_beam.data.data_error import BeamDataError
from pytest_beam.data.markers import END_TOKEN, strip_plan_marker
from pytest_beam.data.repairs import Repair, apply_repair, repairs
from pytest_beam.data.sets import known_bad_rubrics, load_set
from pytest_beam.data.survey import REVIEWED_AND_SOUND, markers, rubric_findings, runaways

TIERS_HERE = ("100K", "500K", "1M")


@pytest.fixture(scope="module")
def found(beam_data_dir):
    return {tier: runaways(beam_data_dir, tier) for tier in TIERS_HERE}


def test_every_runaway_of_the_copy_is_pinned_and_no_other(found):
    """The detector's finds on all 100K, 500K and 1M chats here are exactly the pinned repairs."""
    detected = {(r.tier, r.conversation, r.message): r for rows in found.values() for r in rows}
    pinned = {key: r for key, r in repairs().items() if r.kind != "leaked_turn"}
    assert sorted(detected) == sorted(pinned)
    assert Counter(tier for tier, _, _ in detected) == {"100K": 3, "500K": 20, "1M": 18}
    for key, row in detected.items():
        assert pinned[key].sha256 == row.sha256, key
        assert row.role == "assistant", key
    # the kinds: 100K 4/97 is the indentation run, 1M 9/477 the zeros, the other 39 are loops
    assert {key for key, r in detected.items() if r.kind == "character_run"} == {("100K", "4", 97), ("1M", "9", 477)}
    assert sum(r.runaway_characters for r in detected.values()) == 1_486_711


def _message(bench, conversation: str, message: int):
    return next(m for d in bench.documents[conversation] for m in d.messages if m.id == message)


def test_the_repairs_reach_what_a_system_ingests(beam_data_dir):
    """Among them two loops of 100K that its first survey missed: conversation 5 message 123 (25,496
    lines of '/') and conversation 2 message 169 (708 lines of 'husky - commit-msg >')."""
    small = load_set("complete", beam_data_dir, "2,5")
    loop = _message(small, "5", 123)
    assert len(loop.text) < 2_300 and "characters of a generation loop repeating the lines above" in loop.text
    assert "50,996 characters" in loop.text
    assert len(_message(small, "2", 169).text) < 3_000
    large = load_set("full", beam_data_dir, "28", tier="500K")
    table = _message(large, "28", 305)
    assert len(table.text) < 1_700 and table.text.count("|") < 100
    one_m = load_set("full", beam_data_dir, "4,9", tier="1M")
    zeros = _message(one_m, "9", 477)
    assert "0" * 20 + " [pytest-beam: 11,162 more '0' characters cut]" in zeros.text
    assert zeros.text.startswith(_raw(beam_data_dir, "1M", "9", 477)[:3_188])  # the text before the run is kept
    leaked = _message(one_m, "4", 1009)
    assert "->->" not in leaked.text and "Please respond only in English" not in leaked.text
    assert "Could you please provide the complete implementation of the circuit breaker pattern in Python?\n\n" \
           "Certainly! Below is the complete implementation" in leaked.text


def _raw(root, tier, conversation, message) -> str:
    import json

    chat = json.loads((root / f"chats/{tier}/{conversation}/chat.json").read_text(encoding="utf-8"))
    return next(m["content"] for s in chat for t in s["turns"] for m in t if m["id"] == message)


def test_a_repair_refuses_changed_content_and_a_different_cut(beam_data_dir):
    original = _raw(beam_data_dir, "500K", "9", 461)
    repair = repairs()[("500K", "9", 461)]
    assert hashlib.sha256(original.encode()).hexdigest() == repair.sha256
    with pytest.raises(BeamDataError, match=r"500K conversation 9, message 461: content sha256 is .*expected"):
        apply_repair(repair, original + " ")
    wrong = Repair(**{**repair.__dict__, "removed": repair.removed + 1})
    with pytest.raises(BeamDataError, match="would remove 105,002 characters, not the 105,003 pinned"):
        apply_repair(wrong, original)


NEW_SHAPES = [  # shapes of 500K and 1M that 100K did not have (pytest_beam/data/markers.py has the survey)
    ("how can I fix it? ->-> 5,", "how can I fix it?"),  # 18 in 1M
    ("my daily routine? ->-> 7,(N/A, but related to the context, however the instruction is to only use X)",
     "my daily routine?"),  # 9 in 500K
    ("deadline is June 15 ->-> 9,5) Decision & Change Labels:Career Transition: Considering a move, June 15.",
     "deadline is June 15"),  # 4 in 500K
    ("based on my progress? ->-> 7,Goals & Progress Labels:Health Goals", "based on my progress?"),  # 1
    ("the transition smoother? ->-> 3,(N/A - detail from CONTEXT REFERENCE, corrected to) I've added X, any tips?",
     "the transition smoother? I've added X, any tips?"),  # 1
    ("can range from $100 to $20[END_OF_TEXT]", "can range from $100 to $20"),  # 4 assistant replies
]


@pytest.mark.parametrize(("raw", "clean"), NEW_SHAPES)
def test_each_marker_shape_of_the_larger_tiers_is_stripped(raw, clean):
    assert strip_plan_marker(raw) == clean


@pytest.mark.parametrize(("tier", "total", "shapes"), [
    ("500K", 14_592, {"->-> N,N": 14_412, "->-> N,N/A": 153, "->-> N,(note)": 9, "->-> N,N)": 6,
                      "->-> N,N) <label>": 4, END_TOKEN: 3, "->-> N,N, N": 3, "->-> N,<label>": 1,
                      "->-> N,(note) text": 1}),
    ("1M", 6_258, {"->-> N,N": 6_187, "->-> N,N/A": 51, "->-> N,": 18, "unknown": 1, END_TOKEN: 1}),
])
def test_the_marker_survey_of_the_larger_tiers(beam_data_dir, tier, total, shapes):
    """Every marker of the raw chats by shape; the one 'unknown' is 1M 4/1009's leaked turn (repaired)."""
    survey = markers(beam_data_dir, tier)
    assert dict(survey.shapes) == shapes and sum(survey.shapes.values()) == total
    if "unknown" in shapes:
        assert survey.examples["unknown"] == ("4", 1009) and repairs()[("1M", "4", 1009)].kind == "leaked_turn"


@pytest.fixture(scope="module")
def complete_sets(beam_data_dir):
    """tier -> (raw, stripped) complete set, loaded once for the tests below."""
    return {tier: (load_set("complete", beam_data_dir, tier=tier, keep_markers=True),
                   load_set("complete", beam_data_dir, tier=tier)) for tier in ("500K", "1M")}


@pytest.mark.parametrize("tier", ["500K", "1M"])
def test_no_marker_or_end_token_reaches_a_system(complete_sets, tier):
    raw, clean = complete_sets[tier]
    left = [(c, m.id) for c, docs in clean.documents.items() for d in docs for m in d.messages
            if "->->" in m.text or END_TOKEN in m.text]
    assert left == []
    had = sum("->->" in m.text for docs in raw.documents.values() for d in docs for m in d.messages)
    assert had > 6_000


def test_every_rubric_check_hit_is_flagged_or_reviewed(beam_data_dir):
    known = known_bad_rubrics()
    hits = {f.question_id: f for tier in TIERS_HERE for f in rubric_findings(beam_data_dir, tier)}
    assert len(hits) == 16
    unhandled = [qid for qid in hits if qid not in known and qid not in REVIEWED_AND_SOUND]
    assert unhandled == []
    assert set(REVIEWED_AND_SOUND) <= set(hits)  # no stale review
    flagged = {qid for qid in known if qid.startswith(("500K/", "1M/"))}
    assert flagged == {qid for qid in hits if qid not in REVIEWED_AND_SOUND and qid.startswith(("500K/", "1M/"))}
    assert len(flagged) == 8
    # 100K's hits are four of the 28 flags its reading found
    assert {qid for qid in hits if "/" not in qid} == {"conv1:temporal_reasoning:0", "conv12:temporal_reasoning:1",
                                                     "conv14:event_ordering:1", "conv17:temporal_reasoning:1"}


def test_the_500K_flags_land_on_their_questions_with_reasons_that_cite_the_chat(complete_sets):
    import re

    bench = complete_sets["500K"][1]
    flagged = {q.id: q.known_bad_rubric for q in bench.questions if q.known_bad_rubric}
    assert flagged == {qid: reason for qid, reason in known_bad_rubrics().items() if qid.startswith("500K/")}
    assert all(re.search(r"messages? \d+", reason) for reason in flagged.values())

"""Each scoring profile on hand-computed cases; the expected values are worked out here, by hand."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pytest_beam.scoring import score_question
from pytest_beam.scoring.omnimemeval import event_positions, omnimemeval_event_score, snap_item_score
from pytest_beam.scoring.profile_names import PROFILE_TABLE
from pytest_beam.scoring.profiles import PROFILE_NAMES, get_profile
from pytest_beam.settings import OPTION_BY_NAME

from .scripted import judge_json, letter_judge, line_for, question, replies

QUESTION = "Which tools did I pick for the build?"


def test_profiles_are_the_scorer_choices():
    """One list of names (scoring/profile_names.py): the registry holds one profile object per name, and the
    --beam-scorer choices are that list itself, not a copy kept equal by hand."""
    assert PROFILE_NAMES == ("default", "upstream", "omnimemeval")
    assert OPTION_BY_NAME["scorer"].choices is PROFILE_NAMES
    assert list(PROFILE_TABLE) == list(PROFILE_NAMES) and all(get_profile(n).name == n for n in PROFILE_NAMES)
    assert get_profile("omnimemeval").half_credit == "snapped to 0, 0.5 or 1"
    assert get_profile(get_profile("upstream")) is get_profile("upstream")
    with pytest.raises(ValueError, match=r"unknown scoring profile 'nope'.*default, upstream, omnimemeval"):
        get_profile("nope")


# Three rubric items judged 1, 0.5 and 0.
#   default:     (1 + 0.5 + 0) / 3           = 1.5 / 3 = 0.5
#   upstream:    (int(1) + int(0.5) + int(0)) / 3 = (1 + 0 + 0) / 3 = 1/3
#   omnimemeval: (1 + 0.5 + 0) / 3           = 0.5   (0.5 is >= 0.25 and < 0.75: kept as 0.5)
@pytest.mark.parametrize(("profile", "expected", "items"), [
    ("default", 0.5, [1.0, 0.5, 0.0]),
    ("upstream", 1 / 3, [1.0, 0.0, 0.0]),
    ("omnimemeval", 0.5, [1.0, 0.5, 0.0]),
])
def test_a_half_credit_item_per_profile(profile, expected, items):
    q = question("information_extraction", ["names make", "names ninja", "names bazel"], text=QUESTION)
    judge = replies(judge_json(1), judge_json(0.5), judge_json(0))
    result = score_question(q, "make and ninja, partly", judge, profile)
    assert result.mode == profile
    assert [i.score for i in result.items] == items
    assert result.score == pytest.approx(expected, abs=1e-12)
    assert result.judge_calls == 3 and result.flags == []


@pytest.mark.parametrize(("profile", "question_shown"), [("default", True), ("upstream", False), ("omnimemeval", True)])
def test_the_question_is_filled_into_the_judge_prompt(profile, question_shown):
    q = question("abstention", ["says there is no information"], text=QUESTION)
    judge = replies(judge_json(1))
    score_question(q, "I do not know.", judge, profile)
    (prompt,) = judge.prompts
    assert (QUESTION in prompt) is question_shown
    assert ("<question>" in prompt) is not question_shown


# omnimemeval snaps any number: 0.8 -> 1 (>= 0.75), 0.3 -> 0.5 (>= 0.25), 0.2 -> 0; "score: 0.9" in prose -> 1.
#   (1 + 0.5 + 0 + 1) / 4 = 2.5 / 4 = 0.625
# default accepts only 0, 0.5, 1: all four are parse errors -> 0.
def test_omnimemeval_snaps_other_numbers_where_default_refuses_them():
    q = question("knowledge_update", ["a", "b", "c", "d"], text=QUESTION)
    texts = (judge_json(0.8), judge_json(0.3), judge_json(0.2), "I'd say score: 0.9 overall")
    omni = score_question(q, "x", replies(*texts), "omnimemeval")
    assert [i.score for i in omni.items] == [1.0, 0.5, 0.0, 1.0]
    assert omni.score == pytest.approx(0.625) and omni.flags == []
    default = score_question(q, "x", replies(*texts), "default")
    assert default.score == 0.0 and default.flags == ["parse_error"]
    quoted = score_question(question("knowledge_update", ["a"]), "x", replies('{"score": "1"}'), "omnimemeval")
    assert quoted.score == 0.0 and quoted.flags == ["parse_error"]  # a quoted number is no number there
    unparsed = score_question(question("knowledge_update", ["a"]), "x", replies("no idea"), "omnimemeval")
    assert unparsed.score == 0.0 and unparsed.flags == ["parse_error"] and not unparsed.items[0].parsed


def test_snap_boundaries():
    assert [snap_item_score(x) for x in (0.0, 0.2499, 0.25, 0.5, 0.7499, 0.75, 1.0)] == [0, 0, 0.5, 0.5, 0.5, 1, 1]


# Rubric A B C D E; the answer's lines are C, A, an extra event X, B, E (D is missing).
ANSWER = "\n".join([line_for("C"), line_for("A"), "event X (not in the rubric)", line_for("B"), line_for("E")])

# default / upstream (BEAM's metric after alignment): aligned answer [C, A, X, B, E].
#   tp = 4 (A B C E), fp = 1 (X), fn = 1 (D): P = R = 4/5, F1 = 4/5.
#   Union = A B C D E X; missing items rank 7.  Reference ranks: A1 B2 C3 D4 E5 X7.
#   Answer ranks: C1 A2 X3 B4 E5 -> A2 B4 C1 D7 E5 X3.  In union order y = 2 4 1 7 5 3 (x rises):
#   concordant = 4 + 2 + 3 = 9, discordant = 1 + 2 + 2 + 1 = 6, 15 pairs, no ties:
#   tau_b = (9 - 6) / 15 = 1/5, tau_norm = (1 + 1/5) / 2 = 3/5.
#   default = F1 x tau_norm = 4/5 x 3/5 = 12/25; upstream = tau_norm = 3/5.
# omnimemeval: positions (line numbers) A2 B4 C1 D- E5; found 4 of 5 -> coverage 4/5.
#   Rubric order 0 1 2 4 vs positions 2 4 1 5, pairs: (A,B)+ (A,C)- (A,E)+ (B,C)- (B,E)+ (C,E)+
#   -> tau_b = (4 - 2) / 6 = 1/3, tau_norm = (1 + 1/3) / 2 = 2/3, score = 2/3 x 4/5 = 8/15.
#   The extra line X changes nothing here.
@pytest.mark.parametrize(("profile", "expected", "tau_norm"), [
    ("default", Fraction(12, 25), Fraction(3, 5)),
    ("upstream", Fraction(3, 5), Fraction(3, 5)),
    ("omnimemeval", Fraction(8, 15), Fraction(2, 3)),
])
def test_event_ordering_with_missing_and_extra_events(profile, expected, tau_norm):
    q = question("event_ordering", ["A", "B", "C", "D", "E"])
    result = score_question(q, ANSWER, letter_judge(), profile)
    assert result.score == pytest.approx(float(expected), abs=1e-12)
    assert result.event_tau_norm == pytest.approx(float(tau_norm), abs=1e-12)
    assert result.event_f1 == pytest.approx(0.8, abs=1e-12)
    assert result.items == [] and result.mode == profile


def test_omnimemeval_event_metric_by_hand():
    # Fewer than two found: coverage x 0.5.  One of four -> 1/4 x 1/2 = 1/8.  None -> 0.
    assert omnimemeval_event_score([-1, 3, -1, -1]).score == pytest.approx(0.125)
    assert omnimemeval_event_score([-1, -1, -1]).score == 0.0
    # Reversed order, all found: tau_b = -1 -> tau_norm 0 -> score 0.
    reversed_ = omnimemeval_event_score([3, 2, 1])
    assert (reversed_.tau_b, reversed_.tau_norm, reversed_.score) == (-1.0, 0.0, 0.0)
    # A tie in positions (two events at line 2), 3 events: pairs (0,1)+ (0,2)+ (1,2) tied in positions.
    #   C = 2, D = 0, n0 = 3, ties in rubric order 0, ties in positions 1:
    #   tau_b = 2 / sqrt(3 x 2) = 0.8165, tau_norm = 0.9082, coverage 1.
    tied = omnimemeval_event_score([1, 2, 2])
    assert tied.tau_b == pytest.approx(2 / 6 ** 0.5) and tied.score == pytest.approx((1 + 2 / 6 ** 0.5) / 2)
    # Positions from an alignment: line 1 -> event 2, line 2 -> nothing, line 3 -> event 0.
    assert event_positions([2, None, 0], 4) == [3, -1, 1, -1]


def test_omnimemeval_one_found_event_through_the_scorer():
    q = question("event_ordering", ["A", "B", "C", "D"])
    result = score_question(q, line_for("B") + "\nsomething else", letter_judge(), "omnimemeval")
    assert result.score == pytest.approx(1 / 4 * 0.5)
    assert result.event_detail is not None and result.event_detail.tau_b is None

"""Kendall tau-b (scipy's variant b, in pure Python) and the event-ordering metric."""

from __future__ import annotations

import json
import math

import pytest

from pytest_beam.scoring.metrics import event_ordering_metrics, kendall_tau_b, ranks_over_union

from .beam_files import beam_file


def vector_cases():
    return json.loads(beam_file("event_ordering_vectors.json").read_text(encoding="utf-8"))["cases"]


def test_vectors_file_reproduced_to_6_decimals():
    cases = vector_cases()
    assert cases
    for case in cases:
        m = event_ordering_metrics(case["reference"], case["aligned_answer"])
        got = {
            "precision": m.precision,
            "recall": m.recall,
            "event_f1": m.f1,
            "tau_b": m.tau_b,
            "event_tau_norm": m.tau_norm,
            "score": m.score,
        }
        for key, value in got.items():
            assert round(value, 6) == pytest.approx(case[key], abs=1e-9), (case["case"], key, value)


# Values computed once with scipy 1.17.1: scipy.stats.kendalltau(x, y, variant="b").statistic
SCIPY_VALUES = [
    ([1, 2, 3, 4, 5], [3, 4, 1, 2, 5], 0.19999999999999998),
    ([1, 1, 2, 2, 3], [1, 2, 1, 3, 3], 0.49999999999999994),
    ([1, 2, 3, 4, 5, 6], [2, 1, 6, 6, 6, 6], 0.6024640760767093),
    ([1, 2, 3, 4, 6, 6], [1, 3, 2, 6, 4, 5], 0.5520524474738834),
]


@pytest.mark.parametrize(("x", "y", "expected"), SCIPY_VALUES)
def test_tau_b_matches_scipy_with_ties(x, y, expected):
    assert kendall_tau_b(x, y) == pytest.approx(expected, abs=1e-15)
    assert kendall_tau_b(y, x) == pytest.approx(expected, abs=1e-15)


def test_tau_b_extremes():
    assert kendall_tau_b([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0


@pytest.mark.parametrize(
    ("x", "y"),
    [([], []), ([1], [1]), ([1, 1, 1], [1, 2, 3]), ([1, 2, 3], [4, 4, 4]), ([2, 2], [2, 2])],
)
def test_tau_b_undefined_is_nan(x, y):
    assert math.isnan(kendall_tau_b(x, y))


def test_tau_b_length_mismatch_raises():
    with pytest.raises(ValueError):
        kendall_tau_b([1, 2], [1, 2, 3])


def test_ranks_tie_missing_items_last_and_repeats_take_last_position():
    union = ["A", "B", "C", "X"]
    assert ranks_over_union(["A", "B", "C"], union) == [1, 2, 3, 5]
    assert ranks_over_union(["X", "A", "X"], union) == [2, 5, 5, 3]


def test_empty_answer_scores_zero_without_crashing():
    m = event_ordering_metrics(["A", "B", "C"], [])
    assert (m.precision, m.recall, m.f1) == (0.0, 0.0, 0.0)
    assert math.isnan(m.tau_b) and not m.tau_defined
    assert m.tau_norm == 0.0 and m.score == 0.0


def test_nan_tau_becomes_zero_even_with_perfect_f1():
    m = event_ordering_metrics(["A"], ["A"])
    assert m.f1 == 1.0
    assert math.isnan(m.tau_b)
    assert m.tau_norm == 0.0 and m.score == 0.0


def test_missing_and_extra_items_by_hand():
    # aligned [B, A, Q, D] against A B C D: tp 3, fp 1, fn 1; C=6 D=4 over 10 pairs -> tau 0.2
    m = event_ordering_metrics(["A", "B", "C", "D"], ["B", "A", "Q", "D"])
    assert (m.precision, m.recall) == (0.75, 0.75)
    assert m.f1 == pytest.approx(0.75)
    assert m.tau_b == pytest.approx(0.2)
    assert m.tau_norm == pytest.approx(0.6)
    assert m.score == pytest.approx(0.45)


def test_repeated_unmatched_item_counts_twice_as_false_positive():
    m = event_ordering_metrics(["A", "B"], ["A", "X", "B", "X"])
    assert m.precision == pytest.approx(2 / 4)
    assert m.recall == 1.0


def test_evidence_recall():
    from pytest_beam.scoring import evidence_recall

    assert evidence_recall((3, 5, 7, 7), {5, 7, 9}) == pytest.approx(2 / 3)
    assert evidence_recall((3,), set()) == 0.0
    assert evidence_recall((3,), None) == 0.0
    assert evidence_recall((), {1, 2}) is None

"""The cluster bootstrap against brute force: every resample enumerated, and a slow loop on the same draws."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pytest_beam.results.intervals import cluster_bootstrap, conversation_of, paired_bootstrap

# Three conversations: conv1 scores 1 and 0, conv2 scores 1, conv3 scores 0, 0 and 0.5.
QUESTIONS = {
    "conv1:abstention:0": 1.0, "conv1:abstention:1": 0.0,
    "conv2:summarization:0": 1.0,
    "conv3:event_ordering:0": 0.0, "conv3:event_ordering:1": 0.0, "conv3:summarization:0": 0.5,
}
BY_CONVERSATION = {"1": [1.0, 0.0], "2": [1.0], "3": [0.0, 0.0, 0.5]}
ORDER = ["1", "2", "3"]


def slow_mean(drawn: list[str]) -> float:
    """The mean over every question of the drawn conversations, one question at a time."""
    values = [score for cid in drawn for score in BY_CONVERSATION[cid]]
    return sum(values) / len(values)


def slow_quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default method), written out."""
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    below = math.floor(h)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (h - below) * (ordered[above] - ordered[below])


def test_every_resample_of_three_conversations_enumerated():
    every = list(itertools.product(range(3), repeat=3))  # 27 equally likely resamples
    means = [slow_mean([ORDER[i] for i in draw]) for draw in every]
    # Spot checks by hand: conv1 thrice -> (1+0) x 3 / 6 = 0.5; conv2 thrice -> 1.0;
    # conv3 thrice -> 1.5 / 9 = 1/6; one of each -> (1 + 1 + 0.5) / 6 = 2.5 / 6.
    assert means[0] == 0.5 and means[13] == 1.0 and means[26] == pytest.approx(1 / 6)
    assert means[every.index((0, 1, 2))] == pytest.approx(2.5 / 6)
    result = cluster_bootstrap(QUESTIONS, draws=np.array(every))
    assert result.mean == pytest.approx(2.5 / 6)
    assert result.low == pytest.approx(slow_quantile(means, 0.025), abs=1e-12)
    assert result.high == pytest.approx(slow_quantile(means, 0.975), abs=1e-12)
    # The smallest mean is (3,3,3) = 1/6 and the largest (2,2,2) = 1; the 2.5% point lies between
    # the two smallest order statistics, the 97.5% point between the two largest.
    assert 1 / 6 <= result.low <= sorted(means)[1] and sorted(means)[-2] <= result.high <= 1.0
    assert (result.questions, result.clusters, result.resamples) == (6, 3, 27)


def test_random_resamples_equal_a_slow_loop_on_the_same_seeded_draws():
    seed, resamples = 7, 2000
    draws = np.random.default_rng(seed).integers(0, 3, size=(resamples, 3))
    means = [slow_mean([ORDER[i] for i in row]) for row in draws.tolist()]
    result = cluster_bootstrap(QUESTIONS, seed=seed, resamples=resamples)
    assert result.low == pytest.approx(slow_quantile(means, 0.025), abs=1e-12)
    assert result.high == pytest.approx(slow_quantile(means, 0.975), abs=1e-12)
    assert (result.seed, result.resamples) == (seed, resamples)


def test_seeded_and_reproducible():
    first = cluster_bootstrap(QUESTIONS, seed=3)
    assert cluster_bootstrap(QUESTIONS, seed=3) == first
    # the same scores in another order (xdist workers finish in any order) give the same interval
    assert cluster_bootstrap(dict(reversed(list(QUESTIONS.items()))), seed=3) == first
    assert cluster_bootstrap(QUESTIONS, seed=4) != first


def test_the_order_of_the_questions_does_not_move_the_interval():
    # Twelve conversations with different scores; a record lists them in the order its workers
    # finished (conv10 before conv2 under -n 5), and the interval must not depend on it.
    scores = {f"conv{c}:abstention:{i}": ((c * 7 + i * 3) % 10) / 10 for c in range(1, 13) for i in range(3)}
    shuffled = dict(sorted(scores.items(), key=lambda kv: (kv[0][::-1], kv[1])))
    assert list(shuffled) != list(scores)
    assert cluster_bootstrap(shuffled) == cluster_bootstrap(scores)


def test_one_conversation_gives_a_point_interval():
    result = cluster_bootstrap({"conv5:abstention:0": 0.2, "conv5:abstention:1": 0.4})
    assert result.low == result.high == pytest.approx(0.3)


def test_paired_delta_over_shared_questions():
    a = dict(QUESTIONS)
    b = {qid: score + 0.1 for qid, score in QUESTIONS.items()}
    a["conv9:abstention:0"] = 1.0  # only in A
    b["conv8:abstention:0"] = 0.0  # only in B
    result = paired_bootstrap(a, b, seed=1)
    # Every shared delta is +0.1, so every resampled mean is 0.1.
    assert result.mean == pytest.approx(0.1) and result.low == pytest.approx(0.1) and result.high == pytest.approx(0.1)
    assert result.distinguishable and (result.only_in_a, result.only_in_b, result.questions) == (1, 1, 6)


def test_paired_noise_is_not_distinguishable():
    # conv1 gains 0.5 on each question, conv2 loses 0.5, conv3 is unchanged: mean delta 0 and
    # resamples that draw conv1 more often than conv2 go positive, the others negative.
    a = {f"conv{c}:abstention:{i}": 0.5 for c in (1, 2, 3) for i in (0, 1)}
    b = {qid: 0.5 + {"1": 0.5, "2": -0.5, "3": 0.0}[conversation_of(qid)] for qid in a}
    result = paired_bootstrap(a, b, seed=2)
    assert result.mean == pytest.approx(0.0)
    assert result.low < 0 < result.high and not result.distinguishable


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="no scores"):
        cluster_bootstrap({})
    with pytest.raises(ValueError, match="share no question"):
        paired_bootstrap({"conv1:a:0": 1.0}, {"conv2:a:0": 1.0})
    with pytest.raises(ValueError, match="not a BEAM question id"):
        conversation_of("q17")
    with pytest.raises(ValueError, match="finite"):
        cluster_bootstrap({"conv1:a:0": float("nan")})
    with pytest.raises(ValueError, match="level"):
        cluster_bootstrap(QUESTIONS, level=1.5)

"""One verdict of a score (issue 28): the run, ``rejudge`` and the judge check all pass a score the same way."""

from __future__ import annotations

import pytest

from pytest_beam.scoring import passes


@pytest.mark.parametrize(("score", "pass_score", "passed"), [
    (0.5, 0.5, True),  # at the pass score is a pass, in the run and in rejudge alike
    (0.49, 0.5, False),
    (1.0, 1.0, True),
    (0.0, 0.0, True),
    (0.999, 1.0, False),
])
def test_a_score_passes_at_or_above_the_pass_score(score: float, pass_score: float, passed: bool) -> None:
    assert passes(score, pass_score) is passed


def test_rejudge_and_the_run_share_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's records and rejudge's are built by one builder whose outcome follows ``passes``: a
    different rule there would show here."""
    from pytest_beam.results import question_record
    from pytest_beam.results.question_record import expected_outcome

    assert [expected_outcome(s, known_bad, 0.5) for s, known_bad in
            ((0.5, False), (0.25, False), (0.5, True), (0.25, True), (None, False))] == [
        "passed", "failed", "xpassed", "xfailed", "failed"]
    monkeypatch.setattr(question_record, "passes", lambda score, pass_score: False)
    assert expected_outcome(1.0, False, 0.5) == "failed"

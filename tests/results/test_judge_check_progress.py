"""The judge check's progress line: its time left follows the live calls, not the cached ones."""

from __future__ import annotations

from pytest_beam.cli.judge_check_command import progress_line
from pytest_beam.llm.meter import Usage


def test_cases_from_the_cache_do_not_shorten_the_time_left():
    # a re-run: 238 cases replayed from the cache in no time, then 6 live calls of 20 s each
    line = progress_line(244, 571, 120.0, Usage(calls=6, cached_calls=238))
    # 327 cases left, one call each, 20 s a live call: at most 109 min (the old pace said 3 min)
    assert line == ("judge check: 244/571 cases judged, 238 of their calls from the response cache; "
                    "20 s a live call, so at most 109 min left")


def test_no_live_call_yet_promises_no_time():
    assert progress_line(57, 571, 1.5, Usage(cached_calls=57)) == \
        "judge check: 57/571 cases judged, 57 of their calls from the response cache"


def test_a_cold_run_counts_every_call_of_a_case():
    # two calls a case (--beam-judge-runs 2), 10 s each: 90 cases left take 30 min at most
    assert progress_line(10, 100, 200.0, Usage(calls=20)) == \
        "judge check: 10/100 cases judged; 10 s a live call, so at most 30 min left"


def test_the_last_line_has_no_estimate():
    assert progress_line(100, 100, 2000.0, Usage(calls=100)) == "judge check: 100/100 cases judged"

"""The dry-run estimate of the complete set, of any subset, and of judge repeats (issue 17 points 1 and 4)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from pytest_beam.data.sets import load_set
from pytest_beam.session.estimate import ASSUMPTIONS, estimate_run, format_estimate
from pytest_beam.settings import resolve


def settings(**flags):
    return resolve(lambda name: flags.get(name), lambda name: None, environ={})


@pytest.fixture(scope="module")
def complete(beam_data_dir):
    return load_set("complete", beam_data_dir)


def judge_calls_by_hand(questions) -> int:
    """One call per rubric item; an event-ordering answer of n lines against n events asks on average
    n + (n - 1) + ... + 1 yes/no questions (each line against the events not yet used)."""
    total = 0
    for q in questions:
        n = len(q.rubric)
        total += n * (n + 1) // 2 if q.ability == "event_ordering" else n
    return total


@pytest.fixture(scope="module")
def complete_estimate(complete):
    return estimate_run(complete, list(complete.questions), settings(mode="complete"))


def test_the_complete_set_is_estimated_for_400_questions_and_20_conversations(complete, complete_estimate):
    est = complete_estimate
    assert est.questions == 400
    assert sorted(est.chunks, key=int) == [str(n) for n in range(1, 21)]
    assert est.phases["extraction"].calls == sum(est.chunks.values())  # one extraction call per chunk
    assert est.phases["agent"].calls == 400 * ASSUMPTIONS["agent_steps"]  # the assumed steps per question
    assert est.phases["judge"].calls == judge_calls_by_hand(complete.questions)
    assert est.calls == sum(p.calls for p in est.phases.values())
    text = format_estimate(est, settings(mode="complete"))
    assert "complete set, 400 questions" in text and "conv20:" in text
    # the complete set, like full, has no default cap: the estimate says so, and a capped run is within it
    assert "no spend cap set (a run of this set on a paid endpoint needs --beam-max-calls" in text
    assert "the complete set has no default spend cap" in est.over_cap(settings(mode="complete"))
    assert est.over_cap(settings(mode="complete", max_calls="100000", max_tokens="100000000")) is None


def test_a_subset_is_estimated_as_exactly_its_conversations(beam_data_dir, complete_estimate):
    subset = load_set("complete", beam_data_dir, "17,1,4")
    est = estimate_run(subset, list(subset.questions), settings(mode="complete", conversations="1,4,17"))
    assert est.questions == 60
    assert est.chunks == {cid: complete_estimate.chunks[cid] for cid in ("1", "4", "17")}
    assert est.phases["judge"].calls == judge_calls_by_hand(subset.questions)
    assert est.phases["extraction"].prompt_tokens < complete_estimate.phases["extraction"].prompt_tokens


def test_judge_runs_multiply_every_judge_call_and_nothing_else(complete, complete_estimate):
    three = estimate_run(complete, list(complete.questions), settings(mode="complete", judge_runs="3"))
    one = complete_estimate
    assert three.phases["judge"].calls == 3 * one.phases["judge"].calls
    assert three.phases["judge"].prompt_tokens == 3 * one.phases["judge"].prompt_tokens
    assert three.phases["judge"].completion_tokens == 3 * one.phases["judge"].completion_tokens
    for phase in ("extraction", "resolution", "agent"):
        assert three.phases[phase] == one.phases[phase]
    assert "judge calls x 3 judge runs" in format_estimate(three, settings(mode="complete", judge_runs="3"))


def test_zero_judge_runs_is_refused_when_settings_are_read():
    from pytest_beam.settings import SettingsError

    with pytest.raises(SettingsError, match="--beam-judge-runs=0: must be at least 1"):
        settings(judge_runs="0")


@pytest.mark.parametrize(("args", "expected"), [
    ((), "complete set, 400 questions"),
    (("--beam-conversations=1,4,17", "--beam-judge-runs=2"), "complete set, 60 questions"),
])
def test_the_dry_run_command_prints_the_estimate(tmp_path, beam_data_dir, args, expected):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-mode=complete",
           "--beam-dry-run", f"--beam-data={beam_data_dir}", "--beam-model=m", "--beam-base-url=http://127.0.0.1:9/v1",
           *args]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert expected in proc.stdout
    judge_row = next(line for line in proc.stdout.splitlines() if line.startswith("judge "))
    if "--beam-judge-runs=2" in args:
        assert "judge calls x 2 judge runs" in proc.stdout
        assert re.search(r"\(conv1: \d+, conv4: \d+, conv17: \d+\)", proc.stdout)
    assert int(judge_row.split()[1].replace(",", "")) > 0

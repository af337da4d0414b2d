"""The dry-run estimate of the complete set, of any subset, and of judge repeats (issue 17 points 1 and 4)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from pytest_beam.data.sets import load_set
from pytest_beam.memory.graphrag_estimate import ASSUMPTIONS
from pytest_beam.session.dry_run import estimate_systems, format_estimate, over_cap
from pytest_beam.setting_sources import resolve


def settings(**flags):
    return resolve(lambda name: flags.get(name), lambda name: None, environ={})


def estimate_run(bench_set, questions, s):
    """The default system's estimate as the dry run makes it (the judge's calls and the judge check in)."""
    return estimate_systems(bench_set, [("graphrag", q) for q in questions], s)["graphrag"]


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
    assert "the complete set has no default spend cap" in over_cap(est, settings(mode="complete"))
    assert over_cap(est, settings(mode="complete", max_calls="100000", max_tokens="100000000")) is None


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


def dry_run(tmp_path, beam_data_dir, *args, env=None):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--beam-dry-run",
           f"--beam-data={beam_data_dir}", *args]
    environ = {k: v for k, v in os.environ.items() if k not in ("BEAM_BASE_URL", "OPENAI_BASE_URL", "BEAM_MODEL")}
    proc = subprocess.run(
        cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**environ, **(env or {})}
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc.stdout


def totals(stdout: str) -> tuple[int, int]:
    row = next(line for line in stdout.splitlines() if line.startswith("total "))
    _, _, prompt, completion, _ = row.split()
    return int(prompt.replace(",", "")), int(completion.replace(",", ""))


def test_the_dry_run_names_the_endpoint_s_models(tmp_path, beam_data_dir):
    out = dry_run(tmp_path, beam_data_dir, "--beam-model=qwen", "--beam-base-url=http://127.0.0.1:9/v1",
                  "--beam-judge-model=gpt-4.1")
    assert "model: qwen at http://127.0.0.1:9/v1 (judge gpt-4.1)" in out


def test_the_dry_run_on_the_embedded_model_gives_its_time_from_the_speed_measured_here(tmp_path, beam_data_dir):
    """No endpoint: the dry run says the embedded model serves, one request at a time, and how long
    the estimated tokens take at the speed the last embedded run measured on this machine."""
    from pytest_beam.llm import embedded

    reason = embedded.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    (cache / "models" / "embedded-speed.json").write_text(json.dumps(
        {"prompt_tps": 40.0, "generated_tps": 8.0, "source": "as measured on this machine on 2026-12-04"}))
    out = dry_run(tmp_path, beam_data_dir, "--beam-mode=full", env={"BEAM_CACHE_DIR": str(cache)})
    prompt, completion = totals(out)
    minutes = (prompt / 40.0 + completion / 8.0) / 60
    line = next(x for x in out.splitlines() if x.startswith("model: "))
    assert line.startswith(f"model: the embedded model, {embedded.MODEL_TITLE}")
    assert "one request at a time, so -n N does not make it faster" in line
    assert f"about {minutes:,.0f} min at 40 prompt and 8 generated tokens/s, as measured on this machine" in line
    # with no speed kept here, the reference speed, named as such
    out = dry_run(tmp_path, beam_data_dir, env={"BEAM_CACHE_DIR": str(tmp_path / "empty")})
    assert "as measured on 2 idle cores (bench/embedded_model.py)" in out


def test_a_speed_read_from_the_server_s_metrics(tmp_path):
    """The server's counters become the rates the next dry run uses; too little work keeps none."""
    import http.server
    import threading

    from pytest_beam.llm import embedded_speed

    body = {"text": ""}

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            data = body["text"].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        body["text"] = ("# HELP llamacpp:prompt_tokens_total x\nllamacpp:prompt_tokens_total 6000\n"
                        "llamacpp:prompt_seconds_total 120\nllamacpp:tokens_predicted_total 900\n"
                        "llamacpp:tokens_predicted_seconds_total 60\n")
        speed = embedded_speed.read_metrics(url)
        assert (speed.prompt_tps, speed.generated_tps) == (50.0, 15.0)
        embedded_speed.save(speed, tmp_path / "s.json")
        assert embedded_speed.load(tmp_path / "s.json") == speed
        body["text"] = "llamacpp:prompt_tokens_total 10\nllamacpp:prompt_seconds_total 1\n"
        assert embedded_speed.read_metrics(url) is None
    finally:
        server.shutdown()
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"bad.json"):
        embedded_speed.load(tmp_path / "bad.json")


def test_the_judge_check_is_in_the_estimate_when_it_will_run(beam_data_dir):
    """Issue 25: the check's calls are counted before the run, as a phase of their own."""
    lite = load_set("lite", beam_data_dir)
    endpoint = dict(mode="lite", base_url="http://127.0.0.1:9/v1", model="some-model")
    # auto: off for a judge that is not the embedded model, on (9 cases here) for the embedded one
    assert "judge check" not in estimate_run(lite, list(lite.questions), settings(**endpoint)).phases
    embedded = estimate_run(lite, list(lite.questions), settings(mode="lite"))  # no endpoint: the embedded model
    assert embedded.phases["judge check"].calls == 9
    # on: at most 24 cases; N: N cases, each asked judge_runs times
    est = estimate_run(lite, list(lite.questions), settings(**endpoint, judge_check="4", judge_runs="2"))
    assert est.phases["judge check"].calls == 8 and est.phases["judge check"].prompt_tokens > 8 * 800
    assert "judge check" in format_estimate(est, settings(**endpoint))

"""The run record: aggregation, round-trip, NOTICE, latest pointer, listing, provenance."""

from __future__ import annotations

import gzip
import json
import math
import shutil
import subprocess

import pytest

from pytest_beam.llm import Usage
from pytest_beam.results.aggregate import aggregate
from pytest_beam.results.provenance import git_info, lockfile_hash
from pytest_beam.results.question_record import QuestionRecord
from pytest_beam.results.record_files import (
    RecordNotFound,
    list_records,
    load_traces,
    normalize_step,
    read_record,
    with_traces,
    write_record,
)
from pytest_beam.results.schema import LATEST_FILE, NOTICE_FILE, RECORD_FILE, TRACE_FILE
from tests.results.factory import run_record


def q(qid: str, ability: str, score: float | None, outcome: str = "passed", flags=(), **kw) -> QuestionRecord:
    known_bad = "known_bad_rubric" in flags
    return QuestionRecord(id=qid, ability=ability, score=score, outcome=outcome, flags=list(flags),
                          score_excluding_known_bad=None if known_bad else score, **kw)


def test_errors_and_skips_never_count_as_zero():
    abilities, overall = aggregate([
        q("c:a:0", "a", 1.0),
        q("c:a:1", "a", 0.5, "failed"),
        q("c:a:2", "a", None, "error", flags=["timeout"], error="neo4j down"),
        q("c:a:3", "a", None, "skipped", error="spend cap reached"),
        q("c:b:0", "b", None, "error"),
    ])
    a = abilities["a"]
    assert a.n == 2 and a.mean == pytest.approx(0.75)
    assert (a.passed, a.failed, a.errors, a.skipped) == (1, 1, 1, 1)
    assert a.flags == {"timeout": 1}
    b = abilities["b"]
    assert b.n == 0 and b.mean is None and b.mean_excluding_known_bad is None and b.errors == 1
    assert overall.n == 2 and overall.mean == pytest.approx(0.75)
    assert overall.errors == 2 and overall.skipped == 1
    assert overall.mean_of_abilities == pytest.approx(0.75)  # b has no mean, so it is left out


def test_a_score_on_an_errored_question_is_not_counted():
    abilities, _ = aggregate([q("c:a:0", "a", 1.0), q("c:a:1", "a", 0.0, "error")])
    assert abilities["a"].n == 1 and abilities["a"].mean == 1.0


def test_known_bad_is_left_out_of_the_excluding_mean_only():
    abilities, overall = aggregate([
        q("c:a:0", "a", 1.0),
        q("c:a:1", "a", 0.0, "xfailed", flags=["known_bad_rubric"]),
        q("c:a:2", "a", 0.5, flags=["parse_error"]),
        q("c:b:0", "b", 0.25, "failed"),
    ])
    a = abilities["a"]
    assert a.n == 3 and a.mean == pytest.approx(0.5)
    assert a.n_excluding_known_bad == 2 and a.mean_excluding_known_bad == pytest.approx(0.75)
    assert a.flags == {"known_bad_rubric": 1, "parse_error": 1}
    assert a.failed == 1  # the xfailed one
    assert overall.n == 4 and overall.mean == pytest.approx(1.75 / 4)
    assert overall.n_excluding_known_bad == 3 and overall.mean_excluding_known_bad == pytest.approx(1.75 / 3)


def test_known_bad_reason_alone_also_excludes():
    abilities, _ = aggregate([q("c:a:0", "a", 1.0), q("c:a:1", "a", 0.0, known_bad_reason="rubric is wrong")])
    assert abilities["a"].mean_excluding_known_bad == 1.0


def test_record_fills_its_aggregates_when_not_given():
    r = run_record()
    assert set(r.abilities) == {"information_extraction", "event_ordering"}
    assert r.abilities["information_extraction"].mean == pytest.approx(0.75)
    assert r.abilities["information_extraction"].mean_excluding_known_bad == pytest.approx(1.0)
    assert r.overall.n == 3 and r.overall.mean == pytest.approx(2 / 3)


def test_round_trip_and_trace_file(tmp_path):
    results = tmp_path / "results"
    r = run_record()
    lines = [{"question_id": qq.id, **step} for qq in r.questions for step in qq.trace]
    lines.append({"kind": "call", "phase": "judge", "model": "m", "prompt_tokens": 10})
    slim = r.model_copy(update={"questions": [qq.model_copy(update={"trace": []}) for qq in r.questions]})
    path = write_record(results / r.run_id, slim, lines)

    assert path == results / r.run_id / RECORD_FILE
    for where in (results / r.run_id, path, results):  # run dir, record.json, results dir (latest)
        assert read_record(where).model_dump() == slim.model_dump()
    with gzip.open(results / r.run_id / TRACE_FILE, "rt", encoding="utf-8") as fh:
        got = [json.loads(line) for line in fh]
    assert got == json.loads(json.dumps(lines))
    traces = load_traces(results / r.run_id)
    assert traces["conv1:information_extraction:0"][1]["message_ids"] == [12, 40]
    full = with_traces(read_record(results), results / r.run_id)
    assert [qq.trace for qq in full.questions] == [[normalize_step(s) for s in qq.trace] for qq in r.questions]
    # no temporary files left behind by the atomic writes
    assert sorted(p.name for p in (results / r.run_id).iterdir()) == [RECORD_FILE, TRACE_FILE]


def test_trace_defaults_to_the_questions_steps(tmp_path):
    r = run_record()
    write_record(tmp_path / "res" / r.run_id, r)
    assert load_traces(tmp_path / "res" / r.run_id)["conv1:event_ordering:0"] == r.questions[2].trace


def test_notice_and_latest_are_written(tmp_path):
    results = tmp_path / "results"
    write_record(results / "run-a", run_record("run-a"), [])
    write_record(results / "run-b", run_record("run-b"), [])
    notice = (results / NOTICE_FILE).read_text()
    assert "CC BY-SA 4.0" in notice and "creativecommons.org/licenses/by-sa/4.0" in notice
    assert "Tavakoli" in notice and "BEAM" in notice and "arXiv:2510.27246" in notice
    assert (results / LATEST_FILE).read_text().strip() == "run-b"
    assert read_record(results).run_id == "run-b"


def test_nan_and_secrets_never_reach_the_file(tmp_path):
    r = run_record()
    qs = list(r.questions)
    qs[2] = qs[2].model_copy(update={"event_tau_norm": math.nan})
    r = r.model_copy(update={"questions": qs, "settings": {"api_key": "sk-secret-123", "mode": "lite"}})
    path = write_record(tmp_path / "res" / "x", r, [{"value": math.inf}])
    text = path.read_text()
    assert "sk-secret-123" not in text and "NaN" not in text
    data = json.loads(text)
    assert data["questions"][2]["event_tau_norm"] is None
    assert data["settings"]["api_key"] == "<redacted>"


def test_credentials_in_a_url_setting_never_reach_the_record_or_the_page(tmp_path):
    from pytest_beam.results.html import render_html

    settings = {"base_url": "https://beam:pw-url-secret@gpu-box:8000/v1", "neo4j": "bolt://neo4j:pw-bolt-secret@db:7687"}
    r = run_record().model_copy(update={"settings": settings})
    text = write_record(tmp_path / "res" / "x", r, []).read_text()
    page = render_html(r)
    for out in (text, page):
        assert "pw-url-secret" not in out and "pw-bolt-secret" not in out
    data = json.loads(text)
    assert data["settings"] == {"base_url": "https://gpu-box:8000/v1", "neo4j": "bolt://db:7687"}


def test_list_records_oldest_first_and_unreadable_listed(tmp_path):
    results = tmp_path / "results"
    write_record(results / "b", run_record("b", started="2025-02-01T00:00:00+00:00"), [])
    write_record(results / "a", run_record("a", started="2025-01-01T00:00:00+00:00"), [])
    (results / "broken").mkdir()
    (results / "broken" / RECORD_FILE).write_text("{not json")
    entries = list_records(results)
    assert [e.record.run_id for e in entries if e.record] == ["a", "b"]
    broken = [e for e in entries if e.record is None]
    assert len(broken) == 1 and broken[0].path.parent.name == "broken" and broken[0].error


def test_missing_record_names_the_path(tmp_path):
    with pytest.raises(RecordNotFound, match=str(tmp_path / "nope")):
        read_record(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecordNotFound, match="empty"):
        read_record(tmp_path / "empty")


def test_usage_rows_add():
    total = Usage(calls=1, prompt_tokens=5) + Usage(calls=2, cached_calls=1, completion_tokens=3, seconds=1.5)
    assert total == Usage(calls=3, cached_calls=1, prompt_tokens=5, completion_tokens=3, seconds=1.5)


def test_unknown_fields_are_ignored_when_reading(tmp_path):
    data = run_record().model_dump(mode="json")
    data["from_the_future"] = 1
    data["questions"][0]["also_new"] = {"x": 1}
    (tmp_path / RECORD_FILE).write_text(json.dumps(data))
    assert read_record(tmp_path / RECORD_FILE).questions[0].id == "conv1:information_extraction:0"


def test_an_older_records_cache_hit_is_read_and_not_shown(tmp_path):
    """IngestReport.cache_hit left the contract (it was always False); a record that carries it loads,
    and the graph table has no "cached" column any more."""
    from pytest_beam.results.summary import render_summary
    from pytest_beam.system import IngestReport

    assert "cache_hit" not in IngestReport.__dataclass_fields__
    record = json.loads(run_record().model_dump_json())
    record["graph"]["conv1"]["cache_hit"] = False  # as an older record wrote it
    (tmp_path / RECORD_FILE).write_text(json.dumps(record))
    read = read_record(tmp_path / RECORD_FILE)
    assert "cache_hit" not in read.graph["conv1"].model_dump() and read.graph["conv1"].chunks == 6
    lines = render_summary(read)
    header = next(line for line in lines if "empty extr." in line)
    assert "cached" not in header and "seconds" in header


def test_git_info_outside_and_inside_a_repo(tmp_path):
    assert git_info(tmp_path) == (None, None)
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    import os

    run = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True,  # noqa: E731
                                    env={**os.environ, **env})
    run("init", "-q")
    (tmp_path / "f.txt").write_text("1")
    run("add", "f.txt")
    run("commit", "-q", "-m", "one")
    commit, dirty = git_info(tmp_path)
    assert commit and len(commit) == 40 and dirty is False
    (tmp_path / "f.txt").write_text("2")
    assert git_info(tmp_path) == (commit, True)


def test_lockfile_hash_sources(tmp_path):
    import hashlib

    (tmp_path / "requirements.txt").write_text("pydantic==2\n")
    assert lockfile_hash(tmp_path).startswith("requirements.txt:")
    (tmp_path / "uv.lock").write_text("lock")
    assert lockfile_hash(tmp_path) == "uv.lock:" + hashlib.sha256(b"lock").hexdigest()


def test_lockfile_hash_falls_back_to_the_installed_distributions_as_pip_freeze_lists_them(tmp_path):
    """No lock file: the hash of every installed distribution's name==version, read in this process
    (a `pip freeze` subprocess cost about a second of every run), the same list pip freeze gives."""
    import hashlib
    import re
    import subprocess
    import sys

    from pytest_beam.results.provenance import installed_distributions

    value = lockfile_hash(tmp_path)
    listed = installed_distributions()
    assert value == "installed:" + hashlib.sha256("\n".join(listed).encode()).hexdigest()
    pip = [sys.executable, "-m", "pip", "freeze", "--all", "--disable-pip-version-check"]
    out = subprocess.run(pip, capture_output=True, text=True, timeout=120, check=True).stdout
    freeze = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    pinned = {re.sub(r"[-_.]+", "-", n).lower(): v for n, v in (ln.split("==", 1) for ln in freeze if "==" in ln)}
    # every distribution pip pins by version is listed with that version; an editable install, which
    # pip names by its source (-e PATH), is listed by name and version all the same
    assert {f"{n}=={v}" for n, v in pinned.items()} <= set(listed)
    assert len(listed) == len(freeze)


def test_load_traces_reads_agent_trace_lines(tmp_path):
    r = run_record()
    steps = r.questions[1].trace
    lines = [
        {"question": "conv1:information_extraction:1", "phase": "agent", "kind": "agent_trace", "steps": steps,
         "answer": "x", "flags": []},
        {"question": "conv1:information_extraction:1", "phase": "judge", "kind": "chat", "role": "judge"},
    ]
    write_record(tmp_path / "res" / "r", r, lines)
    got = load_traces(tmp_path / "res" / "r")
    assert list(got) == ["conv1:information_extraction:1"]
    assert [s["kind"] for s in got["conv1:information_extraction:1"]] == ["model", "tool", "note"]
    assert got["conv1:information_extraction:1"][1]["message_ids"] == [50, 7]


def test_usage_row_reads_the_meters_latency_field():
    row = Usage.model_validate({"calls": 2, "latency_s": 1.5, "cached_tokens": 7})
    assert row.seconds == 1.5 and row.calls == 2

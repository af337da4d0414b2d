"""Every probing question as a pytest item: ids, markers, modes, selection, xdist groups, help."""

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest


def collect(pytester, *args):
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:randomly", *args)
    ids = [line.strip() for line in result.outlines if line.startswith("beam::")]
    return result, ids


@pytest.fixture
def data_flag(beam_data_dir):
    return f"--beam-data={beam_data_dir}"


def test_lite_lists_exactly_the_two_lite_ids(pytester, data_flag):
    result, ids = collect(pytester, "-m", "lite", data_flag)
    assert ids == ["beam::test_question[conv17:information_extraction:0]",
                   "beam::test_question[conv17:multi_session_reasoning:0]"]
    assert result.ret == 0


def test_full_mode_items_markers_and_groups(pytester, data_flag):
    pytester.makeconftest("""
import json
def pytest_collection_finish(session):
    rows = [[i.callspec.id, sorted(m.name for m in i.iter_markers()),
             [m.kwargs.get('name', (m.args or [None])[0]) for m in i.iter_markers('xdist_group')]]
            for i in session.items]
    open('items.json', 'w').write(json.dumps(rows))
""")
    result, ids = collect(pytester, "--beam-mode=full", data_flag)
    assert result.ret == 0 and len(ids) == 100
    import json
    rows = json.loads((pytester.path / "items.json").read_text())
    by_ability = Counter(qid.split(":")[1] for qid, _, _ in rows)
    by_conv = Counter(qid.split(":")[0] for qid, _, _ in rows)
    assert set(by_ability.values()) == {10} and len(by_ability) == 10
    assert dict(by_conv) == {"conv1": 20, "conv4": 20, "conv6": 20, "conv13": 20, "conv17": 20}
    assert sum("known_bad_rubric" in marks for _, marks, _ in rows) == 4
    for qid, marks, groups in rows:
        assert "beam" in marks and qid.split(":")[1] in marks
        assert groups == [qid.split(":")[0]]  # every item carries its conversation's xdist group
        assert ("lite" in marks) == (qid in {"conv17:information_extraction:0", "conv17:multi_session_reasoning:0"})


def test_marker_selection_and_keywords(pytester, data_flag):
    _, ids = collect(pytester, "--beam-mode=full", "-m", "event_ordering", data_flag)
    assert len(ids) == 10 and all(":event_ordering:" in i for i in ids)
    _, ids = collect(pytester, "--beam-mode=full", "-k", "conv4 and summarization", data_flag)
    assert ids == ["beam::test_question[conv4:summarization:0]", "beam::test_question[conv4:summarization:1]"]


def test_markers_are_registered(pytester):
    from pytest_beam.data.records import ABILITIES

    result = pytester.runpytest("--markers")
    for name in ("beam:", "lite:", "known_bad_rubric:", *(f"{a}:" for a in ABILITIES)):
        assert any(line.startswith(f"@pytest.mark.{name}") for line in result.outlines), name
    # this repository's own markers are not pushed onto every project that installs the plugin
    for name in ("neo4j:", "e2e:", "live_model:"):
        assert not any(line.startswith(f"@pytest.mark.{name}") for line in result.outlines), name


def test_a_data_problem_stops_the_session_before_any_test(pytester, tmp_path):
    pytester.makepyfile("def test_other(): pass")
    result = pytester.runpytest(f"--beam-data={tmp_path / 'missing'}", "--beam")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    problem = [line for line in result.outlines + result.errlines if line.strip()]
    assert len(problem) == 1, problem  # one line, no "! _pytest.outcomes.Exit" banner
    assert problem[0].startswith(f"ERROR: pytest-beam: data source problem: BEAM data directory "
                                 f"{tmp_path / 'missing'} does not exist")
    assert "passed" not in result.stdout.str()


def test_a_data_path_that_is_a_file_is_called_a_file(pytester, tmp_path):
    """Issue 32 item 10: a --beam-data that is a file was reported as "does not exist"."""
    (tmp_path / "beam.json").write_text("{}")
    result = pytester.runpytest(f"--beam-data={tmp_path / 'beam.json'}", "--beam")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (problem,) = [line for line in result.outlines + result.errlines if line.strip()]
    assert problem.startswith(f"ERROR: pytest-beam: data source problem: BEAM data directory "
                              f"{tmp_path / 'beam.json'} is a file, not a directory"), problem
    assert "does not exist" not in problem


def test_explicit_paths_leave_the_suite_out_unless_asked(pytester, data_flag):
    pytester.makeini("[pytest]\nbeam_mode = lite\n")
    pytester.makepyfile(test_mine="def test_mine(): pass")
    _, ids = collect(pytester, "test_mine.py", data_flag.replace("--beam-data", "--beam-data"))
    assert len(ids) == 2  # a beam flag on the command line asks for the suite
    result = pytester.runpytest("--collect-only", "-q", "test_mine.py")
    assert not [line for line in result.outlines if line.startswith("beam::")]


@pytest.mark.parametrize(("flag", "says"), [
    ("--beam-pass-score=2", "--beam-pass-score=2.0: must be between 0 and 1"),
    ("--beam-judge-bar=1.5", "--beam-judge-bar=1.5: a kappa is between -1 and 1"),
    ("--beam-judge-fail-bar=-0.1", "--beam-judge-fail-bar=-0.1: a share is between 0 and 1"),
])
def test_bad_setting_is_a_usage_error(pytester, data_flag, flag, says):
    result = pytester.runpytest(flag, data_flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{says}*"])


def test_help_lists_the_options_in_their_group():
    out = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, check=True).stdout
    assert "pytest-beam: the BEAM memory benchmark:" in out
    for flag in ("--beam-mode", "--beam-data", "--beam-neo4j", "--beam-model", "--beam-judge-model",
                 "--beam-dry-run", "--beam-record-mode", "--beam-max-calls", "--beam-scorer"):
        assert flag in out


def test_loading_the_plugin_imports_no_heavy_library():
    code = ("import sys, pytest_beam.plugin, pytest_beam.settings; "
            "print(sorted(m for m in ('neo4j', 'openai', 'pyarrow', 'huggingface_hub', 'onnxruntime', "
            "'testcontainers', 'syrupy', 'httpx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow  # a pytest run under xdist, each worker its own interpreter
def test_xdist_keeps_each_conversation_on_one_worker_without_dist_flag(pytester, data_flag, model_server):
    pytester.makeconftest("""
import pytest

def pytest_configure(config):
    if not hasattr(config, 'workerinput'):
        open('dist.txt', 'w').write(str(config.option.dist))

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    for item in items:  # only where each item runs matters here
        item.add_marker(pytest.mark.skip(reason="placement only"))
""")
    result = pytester.runpytest_subprocess("--beam-mode=full", "-n", "5", "-v", "-p", "no:randomly", data_flag,
                                           f"--beam-base-url={model_server.base_url}", "--beam-model=m")
    assert (pytester.path / "dist.txt").read_text() == "loadgroup"
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        found = re.search(r"\[(gw\d+)\].*beam::test_question\[(conv\d+):", line)
        if found:
            workers.setdefault(found.group(2), set()).add(found.group(1))
    assert sorted(workers) == ["conv1", "conv13", "conv17", "conv4", "conv6"]
    assert all(len(w) == 1 for w in workers.values()), workers
    result.assert_outcomes(skipped=100)


@pytest.mark.parametrize("flags", [["--beam-model=scripted"], ["--beam-model", "scripted"],
                                   ["--beam-mode-x"], ["--beam-database=x"]])
def test_a_flag_that_only_starts_like_a_suite_flag_does_not_switch_the_suite_on(pytester, beam_data_dir, flags,
                                                                                  monkeypatch):
    monkeypatch.setenv("BEAM_DATA", str(beam_data_dir))  # the data is there: only the switch decides
    pytester.makeini("[pytest]\nbeam_mode = lite\n")
    pytester.makepyfile(test_mine="def test_mine(): pass")
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:randomly", "test_mine.py", *flags)
    assert result.ret in (0, pytest.ExitCode.USAGE_ERROR), result.outlines  # an unknown flag is a usage error
    assert not [line for line in result.outlines if line.startswith("beam::")], result.outlines


@pytest.mark.parametrize("spelling", ["joined", "spaced"])
def test_suite_flags_switch_the_suite_on_in_both_spellings(pytester, beam_data_dir, spelling):
    pytester.makeini("[pytest]\nbeam_mode = lite\n")
    pytester.makepyfile(test_mine="def test_mine(): pass")
    flags = ["--beam-mode=lite"] if spelling == "joined" else ["--beam-mode", "lite"]
    _, ids = collect(pytester, "test_mine.py", f"--beam-data={beam_data_dir}", *flags, "-m", "lite")
    assert len(ids) == 2


def test_the_api_key_is_read_from_the_environment_only(pytester, monkeypatch):
    """An ini key for the secret is neither registered nor read; --help says where the key goes."""
    from pytest_beam.setting_sources import resolve

    monkeypatch.delenv("BEAM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = resolve(get_flag=lambda name: None,
                       get_ini=lambda name: "sk-from-the-ini-file" if name == "api_key" else None, environ={})
    assert settings.api_key is None
    assert resolve(get_flag=lambda name: None, get_ini=lambda name: None,
                   environ={"BEAM_API_KEY": "sk-env"}).api_key == "sk-env"
    pytester.makeini("[pytest]\nbeam_api_key = sk-from-the-ini-file\n")
    pytester.makepyfile(test_mine="def test_mine(): pass")
    result = pytester.runpytest("test_mine.py", "-W", "default")
    result.stdout.fnmatch_lines(["*Unknown config option: beam_api_key*"])
    out = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, check=True).stdout
    out = " ".join(out.split())  # argparse wraps lines
    assert "beam_api_key" not in out
    assert "BEAM_API_KEY" in out and "environment only" in out


def test_paths_resolve_against_where_they_were_given(pytester, beam_data_dir, monkeypatch):
    """Command-line and environment paths against the invocation directory, ini paths against the
    ini file's directory (pytest's own convention), whatever pytest's rootdir is."""
    project = pytester.path
    (project / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\nbeam_results = from-ini\n")
    sub = project / "sub"
    sub.mkdir()
    pytester.makeconftest("""
import json
from pytest_beam.session import get_session
def pytest_collection_finish(session):
    s = get_session(session.config).settings
    open(str(session.config.rootpath / 'paths.json'), 'w').write(json.dumps(
        {'results': str(s.results), 'cache': str(s.cache), 'cassette': str(s.cassette)}))
""")
    monkeypatch.chdir(sub)
    monkeypatch.setenv("BEAM_CACHE", "env-cache")
    data = os.path.relpath(beam_data_dir, sub)
    for spelling in (["--beam-data=" + data, "--beam-cassette=cli.jsonl"],
                     ["--beam-data=" + data, "--beam-cassette", "cli.jsonl"]):
        result = pytester.runpytest("--collect-only", "-q", "-p", "no:randomly", "--beam-record-mode=all",
                                    f"--rootdir={project}", *spelling)
        assert result.ret == 0, result.outlines
        paths = json.loads((project / "paths.json").read_text())
        assert paths == {"results": str(project / "from-ini"), "cache": str(sub / "env-cache"),
                         "cassette": str(sub / "cli.jsonl")}, spelling
    # the spaced DIR outside the project: pytest missed the ini even with --rootdir, so it is refused
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:randomly", f"--rootdir={project}",
                                "--beam-data", data)
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("spelling", ["joined", "spaced"])
def test_beam_data_inside_the_project_works_in_both_spellings(pytester, beam_data_dir, spelling):
    """A folder inside the project moves nothing: `--beam-data DIR` and `--beam-data=DIR` both keep
    the project's ini file (here beam_mode = full, which would otherwise be lost)."""
    pytester.makeini("[pytest]\nbeam_mode = full\nbeam_results = from-ini\n")
    (pytester.path / "beam").symlink_to(beam_data_dir)
    flags = ["--beam-data=beam"] if spelling == "joined" else ["--beam-data", "beam"]
    result, ids = collect(pytester, *flags)
    assert len(ids) == 100, result.outlines[-5:]


def test_beam_data_outside_the_project_spaced_is_refused_naming_the_joined_spelling(pytester, beam_data_dir):
    """`--beam-data DIR` with DIR outside the project (CI's layout, ../shared/beam) moved pytest's
    rootdir to a common parent and dropped the project's ini file; it is now one usage error that
    says to write `--beam-data=DIR`, and the joined spelling keeps the project."""
    pytester.makeini("[pytest]\nbeam_mode = full\n")
    data = os.path.relpath(beam_data_dir, pytester.path)
    assert data.startswith("..")
    result, ids = collect(pytester, "--beam-data", data)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and ids == []
    text = "\n".join(result.errlines + result.outlines)
    assert f"write --beam-data={data} (with '=')" in text
    assert str(pytester.path / "tox.ini") in text  # the ini file it would have missed (makeini writes tox.ini)
    result, ids = collect(pytester, f"--beam-data={data}")
    assert result.ret == 0 and len(ids) == 100


@pytest.mark.parametrize("flag", ["--beam-neo4j=lokal", "--beam-neo4j=http://db:7474", "--beam-embeddings=lokal",
                                  "--beam-embeddings=endpoint:", "--beam-max-calls=-1", "--beam-max-tokens=-5",
                                  "--beam-timeout=0", "--beam-agent-timeout=-1", "--beam-max-retries=-1"])
@pytest.mark.parametrize("stage", ["--collect-only", "--beam-dry-run"])
def test_every_choice_and_bound_is_checked_at_start(pytester, data_flag, flag, stage):
    """A typo in any choice (the Neo4j provider and the embedder included) and a negative cap stop
    the run at start as a usage error naming the flag, in --co and in the dry run alike."""
    pytester.makeini("[pytest]\nbeam_mode = lite\n")
    result = pytester.runpytest(stage, "-q", "-p", "no:randomly", data_flag, flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert flag.split("=")[0] in "\n".join(result.errlines + result.outlines)


@pytest.mark.parametrize("flag", ["--beam-neo4j=local", "--beam-neo4j=DOCKER", "--beam-neo4j=bolt://db:7687",
                                  "--beam-neo4j=neo4j+s://x.databases.neo4j.io", "--beam-embeddings=endpoint:e5",
                                  "--beam-max-calls=0"])
def test_the_valid_spellings_still_pass(pytester, data_flag, flag):
    pytester.makeini("[pytest]\nbeam_mode = lite\n")
    result, ids = collect(pytester, data_flag, flag)
    assert result.ret == 0 and len(ids) == 2


def repo_collect(repo_root, beam_data_dir, *args):
    env = {**os.environ, "BEAM_DATA": str(beam_data_dir), "PYTEST_ADDOPTS": ""}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:randomly", *args],
                          cwd=repo_root, capture_output=True, text=True, timeout=300, env=env)
    items = [line for line in proc.stdout.splitlines() if "::" in line]
    return proc, items


def test_the_benchmark_in_this_repo_collects_only_the_benchmark(repo_root, beam_data_dir):
    """Issue 16 point 6: the ini has both testpaths and beam_mode; the benchmark run (no paths)
    leaves testpaths out, so a benchmark XML holds the questions only."""
    proc, items = repo_collect(repo_root, beam_data_dir, "--beam-mode=full")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert len(items) == 100 and all(i.startswith("beam::") for i in items), items[:5]
    proc, items = repo_collect(repo_root, beam_data_dir, "-m", "lite")
    assert items == ["beam::test_question[conv17:information_extraction:0]",
                     "beam::test_question[conv17:multi_session_reasoning:0]"]


def test_the_projects_tests_collect_without_the_benchmark(repo_root, beam_data_dir):
    proc, items = repo_collect(repo_root, beam_data_dir, "tests")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert len(items) > 200 and not [i for i in items if i.startswith("beam::")]
    assert all(i.startswith("tests/") for i in items)


def test_no_paths_means_the_benchmark_only_and_paths_need_beam(pytester, data_flag):
    """The rule in the README: with no test paths a benchmark run collects the questions only
    (not testpaths, not the folder); with paths, the questions join only with --beam."""
    pytester.makeini("[pytest]\nbeam_mode = lite\ntestpaths = tests\n")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_mine.py").write_text("def test_mine(): pass\n")
    result, ids = collect(pytester, data_flag)
    assert len(ids) == 2 and "test_mine" not in result.stdout.str()
    result, ids = collect(pytester, "tests", "--beam", data_flag)
    assert len(ids) == 2 and "tests/test_mine.py::test_mine" in result.stdout.str()
    result, ids = collect(pytester, "tests")
    assert ids == [] and "tests/test_mine.py::test_mine" in result.stdout.str()


def test_replay_takes_the_cassettes_settings_unless_a_flag_gives_one(pytester, data_flag, monkeypatch):
    """Issue 16 point 5: `--beam-record-mode=none --beam-cassette F` needs no other flag to match."""
    recorded = {"model": "smollm2-135m-instruct", "tool_mode": "json", "agent_steps": 4, "pass_score": 0.0,
                "scorer": "upstream", "judge_runs": 2}
    (pytester.path / "rec.jsonl").write_text(
        json.dumps({"cassette": "pytest-beam", "version": 2, "settings": recorded}) + "\n"
    )
    pytester.makeconftest("""
import json
from pytest_beam.session import get_session
def pytest_collection_finish(session):
    s = get_session(session.config).settings
    open('settings.json', 'w').write(json.dumps({k: getattr(s, k) for k in
        ('model', 'tool_mode', 'agent_steps', 'pass_score', 'scorer', 'judge_runs', 'model_configured')}))
""")
    monkeypatch.setenv("BEAM_MODEL", "a-live-model")  # the environment of live runs does not spoil a replay
    for extra, steps in (([], 4), (["--beam-agent-steps=7"], 7)):
        result = pytester.runpytest("--collect-only", "-q", "-p", "no:randomly", "-m", "lite", data_flag,
                                    "--beam-record-mode=none", "--beam-cassette", "rec.jsonl", *extra)
        assert result.ret == 0, result.outlines
        got = json.loads((pytester.path / "settings.json").read_text())
        assert got == {**recorded, "agent_steps": steps, "model_configured": True}

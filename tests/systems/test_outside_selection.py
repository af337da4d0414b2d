"""Selecting the outside systems (issue 29): collection, `all`, the dry run, and a missing extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_beam.session.system_choice import select_systems
from pytest_beam.system_registry import OUTSIDE_SYSTEMS, OWN_ENV_SYSTEMS, builtin_names
from pytest_beam.systems import missing_extra, system_class


def test_issue_44_s_collection_lists_twelve_items(pytester, beam_data_dir):
    # in a process of its own: a session imports numpy, which this one may not load a second time
    result = pytester.runpytest_subprocess("--co", "-q", "-p", "no:randomly", "-m", "lite",
                                           f"--beam-data={beam_data_dir}",
                                           "--beam-system=graphrag,hindsight,cognee,lightrag,neo4j-graphrag,langmem")
    ids = [line.strip() for line in result.outlines if line.startswith("beam::")]
    assert ids == [f"beam::test_question[{s}-conv17:{q}:0]" for s in ("graphrag", *LEADERS)
                   for q in ("information_extraction", "multi_session_reasoning")]
    assert result.ret == 0


def test_the_issue_s_collection_lists_six_items(pytester, beam_data_dir):
    result = pytester.runpytest("--co", "-q", "-p", "no:randomly", "-m", "lite", f"--beam-data={beam_data_dir}",
                                "--beam-system=graphrag,mem0,graphiti")
    ids = [line.strip() for line in result.outlines if line.startswith("beam::")]
    assert ids == [f"beam::test_question[{s}-conv17:{q}:0]" for s in ("graphrag", "mem0", "graphiti")
                   for q in ("information_extraction", "multi_session_reasoning")]
    assert result.ret == 0


LEADERS = ("hindsight", "cognee", "lightrag", "neo4j-graphrag", "langmem")


def test_all_means_the_built_in_systems_and_outside_ones_are_named():
    assert select_systems("all", []) == ["graphrag", "long-context", "bm25", "dense", "gold-evidence"]
    assert select_systems("graphrag,mem0,graphiti,bm25,gold-evidence", []) == [
        "graphrag", "mem0", "graphiti", "bm25", "gold-evidence"]
    assert set(OUTSIDE_SYSTEMS) == {"mem0", "graphiti", *LEADERS} and not set(OUTSIDE_SYSTEMS) & set(builtin_names())
    assert {"hindsight", "cognee"} == OWN_ENV_SYSTEMS


def test_installed_means_every_system_this_machine_can_run_in_registry_order(monkeypatch):
    everything = ["graphrag", "long-context", "bm25", "dense", "gold-evidence", "mem0", "graphiti", *LEADERS]
    assert select_systems("installed", []) == everything  # CI installs every extra and both environments
    assert select_systems("installed", ["my-memory"]) == [*everything, "my-memory"]
    import pytest_beam.systems as registry

    real = registry.missing_extra
    monkeypatch.setattr(registry, "missing_extra", lambda n: "absent" if n in ("cognee", "mem0") else real(n))
    rest = [n for n in everything if n not in ("cognee", "mem0", "bm25")]
    assert select_systems("bm25,installed", []) == ["bm25", *rest]  # in the order written, each once


def test_the_outside_systems_classes_load_and_are_not_measurement_aids():
    for name in OUTSIDE_SYSTEMS:
        assert missing_extra(name) is None  # the test extra installs the extras, CI makes the own environments
        assert system_class(name).measurement_aid is False


def test_a_missing_own_environment_names_the_command_that_makes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("BEAM_CACHE_DIR", str(tmp_path))
    line = missing_extra("hindsight")
    assert line == ("--beam-system=hindsight runs in an environment of its own (Hindsight fails under openai 3, "
                    "pytest-beam runs on openai 3): make it once with `pytest-beam install-system hindsight` "
                    "(pip, about 1.5 GB)")
    assert "hindsight" not in select_systems("installed", [])


def test_a_run_without_the_extra_stops_at_start_with_the_pip_line(tmp_path, beam_data_dir):
    # a module named like the library that cannot be found: find_spec answers None for it
    code = ("import sys, importlib.util as u; real = u.find_spec; "
            "u.find_spec = lambda n, *a: None if n == 'graphiti_core' else real(n, *a); "
            "import pytest; sys.exit(pytest.main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
                           f"--beam-data={beam_data_dir}", "--beam-system=graphiti", "--beam-base-url=http://127.0.0.1:9/v1",
                           "--beam-model=x", f"--beam-results={tmp_path}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "--beam-system=graphiti needs its library: pip install 'pytest-beam[graphiti]'" in proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ["mem0", "graphiti", *LEADERS])
def test_the_dry_run_lists_an_outside_system_without_an_estimate(tmp_path, beam_data_dir, name):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
                           f"--beam-data={beam_data_dir}", f"--beam-system=graphrag,{name}", "--beam-dry-run"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (f"[{name}] an outside system: its library decides its calls (through the model relay, metered as its own "
            "rows), no estimate (not in the total)") in proc.stdout

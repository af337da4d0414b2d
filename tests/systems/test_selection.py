"""--beam-system: which systems a run compares and how their items are named (issue 18)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_beam.session.scheduling import conversation_of
from pytest_beam.session.system_choice import bare_ids, param_id, select_systems, split_param_id
from pytest_beam.systems import UnknownSystem

FIVE = ["graphrag", "long-context", "bm25", "dense", "gold-evidence"]


def test_all_expands_to_every_registered_system_then_the_declared_ones():
    assert select_systems("all", []) == FIVE
    assert select_systems("bm25, all", ["spy"]) == ["bm25", "graphrag", "long-context", "dense", "gold-evidence", "spy"]
    assert select_systems("spy,gold-evidence", ["spy"]) == ["spy", "gold-evidence"]


def test_an_unknown_name_names_the_known_ones_and_the_declared_ones():
    with pytest.raises(UnknownSystem) as err:
        select_systems("graphrag,bm52", ["spy"])
    assert "'bm52'" in str(err.value)
    assert ("graphrag, long-context, bm25, dense, gold-evidence, mem0, graphiti, hindsight, cognee, lightrag, "
            "neo4j-graphrag, langmem, spy (or 'all', 'installed')") in str(err.value)


def test_ids_are_bare_for_the_default_alone_and_prefixed_otherwise():
    assert bare_ids(["graphrag"]) and not bare_ids(["bm25"]) and not bare_ids(["graphrag", "bm25"])
    assert param_id("gold-evidence", "conv17:event_ordering:1", False) == "gold-evidence-conv17:event_ordering:1"
    assert split_param_id("gold-evidence-conv17:event_ordering:1") == ("gold-evidence", "conv17:event_ordering:1")
    assert split_param_id("conv17:event_ordering:1") == (None, "conv17:event_ordering:1")


@pytest.mark.parametrize("nodeid,conv", [
    ("beam::test_question[conv17:information_extraction:0]", "conv17"),
    ("beam::test_question[bm25-conv4:summarization:1]", "conv4"),
    ("beam::test_question[gold-evidence-conv13:event_ordering:0]", "conv13"),
    ("beam::test_question[long-context-conv1:temporal_reasoning:2]", "conv1"),
])
def test_xdist_groups_every_system_of_a_conversation_together(nodeid, conv):
    assert conversation_of(nodeid) == conv


def _collect(tmp_path, beam_data_dir, *args):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--co", "-q", "--beam",
           f"--beam-data={beam_data_dir}", *args]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ))


def test_items_per_system_and_k_selects_one(tmp_path, beam_data_dir):
    run = _collect(tmp_path, beam_data_dir, "--beam-system=graphrag,bm25", "-k", "bm25")
    ids = sorted(line for line in run.stdout.splitlines() if line.startswith("beam::"))
    assert ids == ["beam::test_question[bm25-conv17:information_extraction:0]",
                   "beam::test_question[bm25-conv17:multi_session_reasoning:0]"], run.stdout
    default = _collect(tmp_path, beam_data_dir)
    assert sorted(line for line in default.stdout.splitlines() if line.startswith("beam::")) == [
        "beam::test_question[conv17:information_extraction:0]", "beam::test_question[conv17:multi_session_reasoning:0]"]


def test_an_unknown_system_is_a_usage_error(tmp_path, beam_data_dir):
    run = _collect(tmp_path, beam_data_dir, "--beam-system=graphrag,bm52")
    assert run.returncode == 4
    assert "bm52" in run.stdout + run.stderr and "gold-evidence" in run.stdout + run.stderr


def test_each_system_runs_a_conversation_in_one_stretch(tmp_path, beam_data_dir):
    """A question is the same parameter value under every system; pytest's grouping by it used to
    interleave the systems, so graphrag ingested conversation 1 again after long-context's turn."""
    run = _collect(tmp_path, beam_data_dir, "--beam-mode=full", "--beam-conversations=1,4",
                   "--beam-system=graphrag,long-context,bm25")
    runs = [line.split("[")[1].split(":")[0] for line in run.stdout.splitlines() if line.startswith("beam::")]
    stretches = [r for n, r in enumerate(runs) if n == 0 or runs[n - 1] != r]
    assert stretches == ["graphrag-conv1", "graphrag-conv4", "long-context-conv1", "long-context-conv4",
                         "bm25-conv1", "bm25-conv4"]
    assert len(runs) == 120


@pytest.mark.parametrize(("nodeid", "classname"), [
    ("beam::test_question[conv17:information_extraction:0]", "beam.information_extraction"),
    ("beam::test_question[conv4:event_ordering:1]@conv4", "beam.event_ordering"),
    ("beam::test_question[bm25-conv1:abstention:0]", "beam.bm25.abstention"),
    ("beam::test_question[gold-evidence-conv13:summarization:1]@conv13", "beam.gold-evidence.summarization"),
    ("tests/test_mine.py::test_mine", None),
    ("tests/test_mine.py::test_param[a-b]", None),
])
def test_a_question_s_junit_class_is_its_ability_and_system(nodeid, classname):
    from pytest_beam.session.system_choice import junit_classname

    assert junit_classname(nodeid) == classname

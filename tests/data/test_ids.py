"""Item ids (issue 26 point 1): one codec parses and builds them, and two tiers' ids never collide."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pytest_beam.data.ids import (
    ItemId,
    QuestionId,
    format_item_id,
    item_id_of_nodeid,
    parse_item_id,
    parse_question_id,
)

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_beam"


@pytest.mark.parametrize(("text", "question", "system"), [
    ("conv17:information_extraction:0", QuestionId("17", "information_extraction", 0), None),
    ("500K/conv3:summarization:1", QuestionId("3", "summarization", 1, "500K"), None),
    ("10M/conv10:event_ordering:0", QuestionId("10", "event_ordering", 0, "10M"), None),
    ("bm25-1M/conv31:abstention:1", QuestionId("31", "abstention", 1, "1M"), "bm25"),
    ("long-context-conv4:knowledge_update:0", QuestionId("4", "knowledge_update", 0), "long-context"),
    ("my-own.sys-500K/conv2:temporal_reasoning:1", QuestionId("2", "temporal_reasoning", 1, "500K"), "my-own.sys"),
])
def test_parse_and_format_are_one_pair(text, question, system):
    item = parse_item_id(text)
    assert item == ItemId(question, system)
    assert str(item) == format_item_id(question, system) == text
    if system is None:
        assert parse_question_id(text) == question and str(question) == text


@pytest.mark.parametrize("text", ["100K/conv3:abstention:0", "conv0:abstention:0", "2M/conv3:abstention:0",
                                  "conv3:Abstention:0", "conv3:abstention", "500K-conv3:abstention:0", "q17"])
def test_what_is_no_question_id(text):
    assert parse_question_id(text) is None


def test_one_id_shape_in_the_package():
    """The three regexes that parsed node ids (collector, selection, scheduling) are gone: no module
    but data/ids.py holds a pattern of a question id."""
    shape = re.compile(r"conv\\d|conv\(\?P")
    holders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and shape.search(node.value):
                holders.append(str(path.relative_to(PACKAGE)))
    assert sorted(set(holders)) == ["data/ids.py"]


def test_the_harness_reads_a_tier_id_and_keeps_the_tiers_apart():
    """Every place that reads an item's id takes the tier's form, and 100K's conv3 is not 500K's."""
    from pytest_beam.results.intervals import conversation_of as cluster_of
    from pytest_beam.session.answer_snapshots import snapshot_filename
    from pytest_beam.session.scheduling import conversation_of
    from pytest_beam.session.system_choice import junit_classname, param_id, split_param_id

    small, large = "conv3:summarization:0", "500K/conv3:summarization:0"
    assert split_param_id(f"bm25-{large}") == ("bm25", large)
    assert split_param_id(large) == (None, large)
    assert param_id("bm25", large, bare=False) == f"bm25-{large}"
    assert conversation_of(f"beam::test_question[{large}]") == "500K/conv3"
    assert conversation_of(f"beam::test_question[dense-{large}]") == "500K/conv3"
    assert conversation_of(f"beam::test_question[{small}]") == "conv3"
    assert junit_classname(f"beam::test_question[bm25-{large}]") == "beam.bm25.summarization"
    assert cluster_of(large) != cluster_of(small)
    assert snapshot_filename(large) == "500K__conv3__summarization__0"
    assert snapshot_filename(small) == "conv3__summarization__0"
    assert item_id_of_nodeid(f"beam::test_question[{large}]") == ItemId(QuestionId("3", "summarization", 0, "500K"))


def test_the_collector_keys_a_tier_item_by_its_id(tmp_path):
    """A report of a 500K item lands in the record under its tier's id (the old regex dropped it)."""
    import pytest as _pytest

    from pytest_beam.results.question_record import QuestionRecord
    from pytest_beam.session.interrupt import TerminateAsInterrupt
    from pytest_beam.session.plan import RunPlan
    from pytest_beam.session.run_results import RunResults

    plan = RunPlan(config=None, settings=None, worker_id=None, run_id="run", run_dir=tmp_path)  # type: ignore[arg-type]
    collector = RunResults(plan, None, ["graphrag"], None, started=0.0, relay_counts=dict,  # type: ignore[arg-type]
                           terminate=TerminateAsInterrupt())
    result = QuestionRecord(id="500K/conv3:summarization:0", score=1.0).run_json()
    report = _pytest.TestReport("beam::test_question[500K/conv3:summarization:0]", ("x", 0, "x"), {}, "passed",
                                None, "call", user_properties=[("beam_result", result)])
    collector.add_report(report)
    [record] = collector.question_records()
    assert list(collector.items) == ["500K/conv3:summarization:0"]
    assert (record.id, record.score) == ("500K/conv3:summarization:0", 1.0)


def test_the_suite_s_node_id_prefix_is_the_one_collection_makes():
    """The codec knows how the suite's node ids start; the session builds them: the two agree."""
    from pytest_beam.data.ids import SUITE_ITEM_PREFIX
    from pytest_beam.session import suite
    from pytest_beam.session.question_items import SUITE_NODEID

    assert f"{SUITE_NODEID}::{suite.test_question.__name__}[" == SUITE_ITEM_PREFIX


@pytest.mark.parametrize("nodeid", [
    "tests/test_mine.py::test_param[conv1:abstention:0]",
    "tests/test_mine.py::test_param[bm25-500K/conv3:summarization:0]",
    "beam::other[conv1:abstention:0]",
])
def test_a_user_test_with_a_question_like_parameter_is_no_suite_item(nodeid):
    """Only the suite's items are questions: a user's own parametrized test in the same session got
    a ``beam.<ability>`` JUnit class (the codec read any ``[...]``), and would have been grouped by
    conversation on xdist."""
    from pytest_beam.session.scheduling import conversation_of
    from pytest_beam.session.system_choice import junit_classname

    assert item_id_of_nodeid(nodeid) is None
    assert junit_classname(nodeid) is None
    assert conversation_of(nodeid) is None

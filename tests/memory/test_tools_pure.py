"""The pure parts of the search and tools: Lucene escaping, fusion, bounding, recall."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pytest_beam.memory.agent import AgentConfig
from pytest_beam.memory.agent_json import AgentAction
from pytest_beam.memory.search import rrf_fuse
from pytest_beam.memory.search_fulltext import escape_lucene, fulltext_query
from pytest_beam.memory.search_hits import SearchHit
from pytest_beam.memory.tool_render import bounded as _bounded
from pytest_beam.memory.tools import CUT_MARKER, ToolBox, cut, openai_tools
from pytest_beam.scoring import evidence_recall


def test_escape_lucene_escapes_every_special_character():
    assert escape_lucene('a+b-c && d || !e (f) {g} [h] ^i "j" ~k *l ?m :n \\o /p') == (
        'a\\+b\\-c \\&\\& d \\|\\| \\!e \\(f\\) \\{g\\} \\[h\\] \\^i \\"j\\" \\~k \\*l \\?m \\:n \\\\o \\/p')
    assert escape_lucene("cats AND dogs OR NOT birds") == "cats and dogs or not birds"


def test_fulltext_query_keeps_words_only_and_drops_stop_words():
    assert fulltext_query('What did I say about "Flask" AND title:x~?') == "say flask title x"
    assert fulltext_query("what is it") == "what is it"  # nothing but stop words: keep them
    assert fulltext_query("?!") == ""
    assert fulltext_query("Lisbon lisbon LISBON") == "lisbon"


def _hit(kind: str, id_: object) -> SearchHit:
    return SearchHit(kind=kind, id=id_, text="", session=1, date=None, message_ids=[id_] if kind == "message" else [])


def test_rrf_fuse_rewards_agreement_and_breaks_ties_stably():
    ft = [_hit("message", 1), _hit("message", 2), _hit("message", 3)]
    vec = [_hit("message", 3), _hit("message", 4), _hit("message", 1)]
    fused = rrf_fuse({"fulltext": ft, "vector": vec}, rrf_k=60)
    assert [h.id for h in fused] == [1, 3, 2, 4]
    assert fused[0].ranks == {"fulltext": 1, "vector": 3}
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 63)
    # a tie (2 and 4 both rank 2 in one list) is broken by kind, then id: same input, same order
    again = rrf_fuse({"vector": vec, "fulltext": ft}, rrf_k=60)
    assert [h.id for h in again] == [1, 3, 2, 4]


def test_rrf_fuse_weights_user_turns_and_leaves_the_rest():
    def hit(kind: str, id_: object, role: str | None) -> SearchHit:
        return SearchHit(kind=kind, id=id_, text="", session=1, date=None, role=role,
                         message_ids=[id_] if kind == "message" else [])

    ranking = [hit("message", 1, "assistant"), hit("statement", "s1", None), hit("message", 2, "user")]
    fused = rrf_fuse({"fulltext": ranking}, rrf_k=5)  # the default prior, 2.5 on user turns
    assert [h.id for h in fused] == [2, 1, "s1"]
    assert fused[0].score == pytest.approx(2.5 / 8)  # rank 3: 1/(5+3), times 2.5
    assert fused[1].score == pytest.approx(1 / 6) and fused[2].score == pytest.approx(1 / 7)
    plain = rrf_fuse({"fulltext": ranking}, rrf_k=5, user_weight=1.0)
    assert [h.id for h in plain] == [1, "s1", 2]


def test_cut_marks_what_it_cuts():
    assert cut("short", 10) == "short"
    assert cut("x" * 25, 10) == "x" * 10 + CUT_MARKER.format(n=15)
    assert cut(None, 5) == ""


def test_bounded_drops_items_and_says_so():
    items = [{"i": i, "text": "y" * 100} for i in range(50)]
    text, shown = _bounded({"q": "x"}, items, 1000)
    assert len(text) <= 1000
    doc = json.loads(text)
    assert doc["results"] == shown and len(shown) < 50 and [s["i"] for s in shown] == list(range(len(shown)))
    assert doc["omitted"].startswith(f"{50 - len(shown)} more item")
    # a custom drop order (e.g. the oldest first) keeps the last items
    text, shown = _bounded({}, items, 1000, drop_order=list(range(50)))
    assert shown[-1]["i"] == 49


def test_evidence_recall():
    assert evidence_recall([1, 2], {1, 2, 3}) == 1.0
    assert evidence_recall([1, 2], {2, 7}) == 0.5
    assert evidence_recall([1, 2], set()) == 0.0
    assert evidence_recall([], {1}) is None
    assert evidence_recall((), set()) is None


def test_tool_specs_are_openai_tools_with_schemas():
    box = ToolBox(driver=None, database="x")
    specs = box.specs()
    assert [s["function"]["name"] for s in specs] == [
        "hybrid_search", "entity_statements", "timeline", "standing_rules", "topic_sessions", "session_outline",
        "read_messages", "cypher"]
    for spec in specs:
        assert spec["type"] == "function"
        fn = spec["function"]
        assert len(fn["description"]) > 40
        assert fn["parameters"]["type"] == "object"
        assert set(fn["parameters"].get("required", [])) <= set(fn["parameters"]["properties"])
    # the specs (part of every request) are stable, and listed the same with no graph (the dry run's estimate)
    assert json.dumps(specs, sort_keys=True) == json.dumps(ToolBox(None, "y").specs(), sort_keys=True)
    assert json.dumps(openai_tools(), sort_keys=True) == json.dumps(specs, sort_keys=True)


def test_tool_argument_errors_come_back_as_text():
    box = ToolBox(driver=None, database="x")
    assert box.call("nope", {}).is_error and "hybrid_search" in box.call("nope", {}).text
    result = box.call("hybrid_search", {"limit": 3})
    assert result.is_error and "'query'" in result.text
    assert box.call("read_messages", {"ids": ["a"]}).is_error
    assert box.call("read_messages", {}).is_error
    assert box.call("hybrid_search", "{not json").is_error


def test_agent_action_schema_and_config():
    assert AgentAction.model_validate({"tool": "read_messages", "arguments": {"ids": [1]}}).tool == "read_messages"
    assert AgentAction.model_validate({"tool": None, "arguments": None}).tool is None  # ready to answer
    with pytest.raises(ValidationError):  # the answer is asked for in plain text, never inside an action
        AgentAction.model_validate({"final_answer": "Paris"})
    with pytest.raises(ValidationError):
        AgentAction.model_validate({"tool": "drop_database"})
    with pytest.raises(ValueError):
        AgentConfig(tool_mode="magic")
    with pytest.raises(ValueError):
        AgentConfig(max_steps=0)


def test_tool_results_render_dates_and_other_values():
    """A date inside a tool result renders as ISO text (it raised UnboundLocalError before)."""
    import datetime as dt

    from pytest_beam.memory.tool_render import dumps, plain

    assert dumps({"date": dt.date(2024, 3, 1)}) == '{"date":"2024-03-01"}'
    assert plain(dt.datetime(2024, 3, 1, 12, 0), 100) == "2024-03-01T12:00:00"


def test_the_first_json_action_must_call_a_tool():
    """Issue 16 point 1: a small model in JSON-action mode skipped the tools unless the first
    action's schema required one; later steps may answer."""
    from pydantic import ValidationError

    from pytest_beam.memory.agent_json import AgentAction, FirstAgentAction, action_schema

    assert action_schema(0) is FirstAgentAction and action_schema(1) is action_schema(5) is AgentAction
    assert action_schema(0, searched=True) is AgentAction  # the harness's own first search looked already
    with pytest.raises(ValidationError):
        FirstAgentAction.model_validate({"tool": None, "arguments": None})
    first = FirstAgentAction.model_validate({"tool": "hybrid_search", "arguments": {"query": "x"}})
    assert first.as_action() == AgentAction(tool="hybrid_search", arguments={"query": "x"})


def test_a_null_integer_argument_takes_its_default():
    """A small model writes ``"limit": null``: that is the default, not None passed on to the
    search (where ``DEFAULT_DEPTH_FACTOR * None`` raised TypeError and errored the question)."""
    from pytest_beam.memory.tool_specs import arg_int

    assert arg_int({"limit": None}, "limit", 10, 1, 50) == 10
    assert arg_int({}, "limit", 10, 1, 50) == 10
    assert arg_int({"limit": "99"}, "limit", 10, 1, 50) == 50
    assert arg_int({"session": None}, "session", None, 0, 9) is None

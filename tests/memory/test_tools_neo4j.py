"""The agent's tools against a real Neo4j holding a small graph built after graph_schema."""

from __future__ import annotations

import json

import pytest

from pytest_beam.memory.search import hybrid_search
from pytest_beam.memory.tool_specs import ToolLimits
from pytest_beam.memory.tools import CUT_MARKER, ToolBox
from pytest_beam.services.access import ReadLimits
from tests.memory.agent_fixtures import *  # noqa: F403
from tests.memory.agent_fixtures import INJECTION_MESSAGE_ID, LONG_MESSAGE_ID, count_graph

pytestmark = pytest.mark.neo4j


@pytest.fixture
def box(graph, embedder):
    driver, database = graph
    return ToolBox(driver, database, embedder)


def test_hybrid_search_finds_messages_and_statements_with_their_message_ids(box):
    result = box.call("hybrid_search", {"query": "When is the move to Lisbon?", "limit": 6})
    doc = json.loads(result.text)
    assert not result.is_error and len(doc["results"]) == 6
    by_kind = {(r["kind"], r.get("message_id", r.get("statement_id"))): r for r in doc["results"]}
    assert ("message", 4) in by_kind and ("statement", "s2") in by_kind
    s2 = by_kind[("statement", "s2")]
    assert s2["message_ids"] == [4] and s2["session"] == 2 and s2["date"] == "2024-03-15"
    assert s2["superseded"] is False
    assert by_kind[("message", 4)]["date"] == "2024-03-15"
    shown = {r["message_id"] for r in doc["results"] if r["kind"] == "message"}
    shown |= {i for r in doc["results"] if r["kind"] == "statement" for i in r["message_ids"]}
    assert result.message_ids == sorted(shown)


def test_hybrid_search_fuses_both_methods(graph, embedder):
    driver, database = graph
    hits = hybrid_search(driver, database, "visa delay September", embedder, limit=5, user_weight=1.0)
    keys = [(h.kind, h.id) for h in hits]
    assert {("message", 4), ("message", 5), ("statement", "s2")} <= set(keys[:4]), keys
    assert all(set(h.ranks) == {"fulltext", "vector"} for h in hits[:3])  # found by both
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    only_ft = hybrid_search(driver, database, "visa delay September", None, limit=5)
    assert all(set(h.ranks) == {"fulltext"} for h in only_ft)
    vec = hybrid_search(driver, database, "visa delay September", embedder, limit=5, method="vector")
    assert len(vec) == 5 and all(set(h.ranks) == {"vector"} for h in vec)


def test_lucene_syntax_in_a_query_is_harmless(box):
    result = box.call("hybrid_search", {"query": 'title:"x" AND (visa OR bar~ -baz) \\ / [a TO z] *'})
    assert not result.is_error
    assert any(r.get("message_id") == 4 for r in json.loads(result.text)["results"])


def test_tool_results_are_deterministic(box, graph, embedder):
    driver, database = graph
    other = ToolBox(driver, database, embedder)
    for name, args in [("hybrid_search", {"query": "Lisbon"}), ("entity_statements", {"name": "Lisbon"}),
                       ("timeline", {"topic": "move to Lisbon"}), ("standing_rules", {}),
                       ("read_messages", {"from_id": 0, "to_id": 9}),
                       ("cypher", {"query": "MATCH (m:Message) RETURN m.id AS id, m.text AS text"})]:
        first, second = box.call(name, args), other.call(name, args)
        assert first.text == second.text and first.message_ids == second.message_ids, name


def test_entity_statements_show_supersession_and_contradiction(box):
    result = box.call("entity_statements", {"name": "lisbon"})
    doc = json.loads(result.text)
    assert [e["name"] for e in doc["entities"]] == ["Lisbon", "Move to Lisbon"]
    statements = {s["statement_id"]: s for s in doc["statements"]}
    assert [s["statement_id"] for s in doc["statements"]] == ["s1", "s2", "s5"]  # chat order
    assert statements["s1"]["superseded"] is True and statements["s1"]["superseded_in_session"] == 2
    assert statements["s1"]["superseded_by"] == ["s2"] and statements["s2"]["supersedes"] == ["s1"]
    assert statements["s2"]["contradicts"] == ["s1"]
    assert statements["s1"]["date"] == "2024-03-01" and statements["s2"]["session"] == 2
    assert result.message_ids == [0, 4, 8]
    missing = box.call("entity_statements", {"name": "Atlantis"})
    assert json.loads(missing.text)["entities"] == [] and missing.message_ids == []


def test_timeline_orders_by_session_and_message(box):
    doc = json.loads(box.call("timeline", {"topic": "Move to Lisbon"}).text)
    sessions = [item["session"] for item in doc["timeline"]]
    assert sessions == sorted(sessions)
    assert [i.get("statement_id") or i.get("event_id") for i in doc["timeline"]] == ["e_move", "s1", "s2"]
    # a topic with no entity of that name falls back to the statements' text
    doc = json.loads(box.call("timeline", {"topic": "visa"}).text)
    assert "s2" in [i.get("statement_id") for i in doc["timeline"]]


def test_standing_rules_by_topic_and_all(box):
    rules = json.loads(box.call("standing_rules", {}).text)["rules"]
    assert {r["statement_id"] for r in rules} == {"s3", "s6"}
    result = box.call("standing_rules", {"topic": "answer format"})
    rules = json.loads(result.text)["rules"]
    assert [r["statement_id"] for r in rules] == ["s3"]
    assert rules[0]["type"] == "Instruction" and rules[0]["triggers"] == ["answer format"]
    assert result.message_ids == [2]


def test_read_messages_by_id_and_range_with_a_cut_marker(box):
    result = box.call("read_messages", {"ids": [4, LONG_MESSAGE_ID, 99]})
    doc = json.loads(result.text)
    assert doc["not_found"] == [99]
    texts = {m["message_id"]: m["text"] for m in doc["messages"]}
    assert texts[4] == "Update: the move to Lisbon is pushed back to September because my visa is delayed."
    assert "…[cut: " in texts[LONG_MESSAGE_ID]
    assert result.message_ids == [4, LONG_MESSAGE_ID]
    ranged = box.call("read_messages", {"from_id": 2, "to_id": 3})
    assert [m["message_id"] for m in json.loads(ranged.text)["messages"]] == [2, 3]


def test_every_result_is_bounded(graph, embedder):
    driver, database = graph
    small = ToolBox(driver, database, embedder, ToolLimits(max_result_chars=700, message_chars=300))
    for name, args in [("hybrid_search", {"query": "move", "limit": 25}), ("read_messages", {"from_id": 0, "to_id": 9}),
                       ("entity_statements", {"name": "Lisbon"}), ("standing_rules", {}),
                       ("cypher", {"query": "MATCH (m:Message) RETURN m.text AS t ORDER BY m.id"})]:
        result = small.call(name, args)
        assert result.chars <= 700, name
    cut_read = small.call("read_messages", {"ids": [LONG_MESSAGE_ID]})
    assert CUT_MARKER.split("{")[0] in cut_read.text
    for name, args in [("topic_sessions", {"topic": "the move"}), ("session_outline", {"session": 3})]:
        assert small.call(name, args).chars <= 700, name


def test_several_messages_share_one_read_budget(box):
    """One long message read alone shows message_chars; read with others it gets an even share of
    read_chars, so reading five messages costs the agent's prompt about read_chars, not five times
    message_chars (issue 27 point 3)."""
    limits = ToolLimits()
    alone = json.loads(box.call("read_messages", {"ids": [LONG_MESSAGE_ID]}).text)["messages"][0]["text"]
    assert alone.startswith("Here is a long packing checklist") and alone.index("…[cut: ") == limits.message_chars
    five = json.loads(box.call("read_messages", {"ids": [1, 3, 5, 7, LONG_MESSAGE_ID]}).text)["messages"]
    assert [m["message_id"] for m in five] == [1, 3, 5, 7, LONG_MESSAGE_ID]
    long_text = five[-1]["text"]
    assert long_text.index("…[cut: ") == limits.read_chars // 5
    assert sum(len(m["text"]) for m in five) < limits.read_chars + 100


def test_cypher_reads_caps_rows_and_returns_errors_as_text(box, graph):
    driver, database = graph
    ok = box.call("cypher", {"query": "MATCH (m:Message)-[:IN_SESSION]->(s:Session {number: 2}) "
                                      "RETURN m ORDER BY m.id"})
    rows = json.loads(ok.text)["rows"]
    assert [r["m"]["id"] for r in rows] == [4, 5, 6, 7] and "embedding" not in rows[0]["m"]
    assert ok.message_ids == [4, 5, 6, 7]
    capped = json.loads(box.call("cypher", {"query": "MATCH (a), (b) RETURN a.id, b.id"}).text)  # range() is refused
    assert len(capped["rows"]) == ToolLimits().cypher_max_rows and "row cap" in capped["truncated"]
    bad = box.call("cypher", {"query": "MATCH (n RETURN n"})
    assert bad.is_error and "SyntaxError" in bad.text
    before = count_graph(driver, database)
    for write in ("MATCH (n) DETACH DELETE n", "CREATE (:Message {id: 1000})",
                  f"MATCH (m:Message {{id: {INJECTION_MESSAGE_ID}}}) SET m.text = 'pwned'"):
        refused = box.call("cypher", {"query": write})
        assert refused.is_error and "read-only" in refused.text, refused.text  # refused by plan now
    assert count_graph(driver, database) == before


def test_cypher_timeout_is_enforced(graph, embedder):
    driver, database = graph
    box = ToolBox(driver, database, embedder, ToolLimits(reads=ReadLimits(timeout_s=1.0, max_rows=100)))
    slow = ("MATCH (a), (b), (c), (d), (e), (f), (g) WHERE size(coalesce(a.text, '') + coalesce(b.text, '') "
            "+ coalesce(c.text, '') + coalesce(d.text, '') + coalesce(e.text, '') + coalesce(f.text, '') "
            "+ coalesce(g.text, '')) < 0 RETURN count(*)")  # rows by the billion, no range() (refused)
    result = box.call("cypher", {"query": slow})
    assert result.is_error and "took too long" in result.text and "TimedOut" in result.text, result.text


def test_entity_lookup_uses_the_normaliser_names_were_written_with(box, graph):
    """Names are stored normalised by resolution's normaliser ("The Louvre" -> "louvre", "Dr. Ana
    López" -> "ana lopez"); the tools once looked them up with another one and missed them."""
    from pytest_beam.memory.name_forms import normalise_name

    driver, database = graph
    for eid, label, name in [("e_louvre", "Place", "Louvre"), ("e_lopez", "Person", "Ana López")]:
        driver.execute_query(
            f"CREATE (e:Entity:{label} {{id: $id, name: $name, norm_name: $norm, summary: ''}}) "
            "WITH e MATCH (s:Statement {id: 's5'}) CREATE (s)-[:ABOUT]->(e)",
            {"id": eid, "name": name, "norm": normalise_name(name, label)}, database_=database)
    for asked, found in [("the Louvre", "Louvre"), ("Dr. Ana Lopez", "Ana López")]:
        doc = json.loads(box.call("entity_statements", {"name": asked}).text)
        assert [e["name"] for e in doc["entities"]][:1] == [found], (asked, doc)


# --- question-aware search (issue 27) ------------------------------------------------------------

def _messages(hits):
    return [(h.id, h.role) for h in hits if h.kind == "message"]


def test_an_ordering_question_gets_the_users_own_turns(graph, embedder):
    from pytest_beam.memory.search import PLAIN_POLICY

    driver, database = graph
    question = ("Can you list the order in which I brought up different aspects of my move to Lisbon "
                "throughout our conversations? Mention ONLY and ONLY three items.")
    before = hybrid_search(driver, database, question, embedder, limit=6, kind="messages", policy=PLAIN_POLICY)
    assert any(role == "assistant" for _, role in _messages(before))  # replies crowd the turns out
    hits = hybrid_search(driver, database, question, embedder, limit=6, kind="messages")
    assert {role for _, role in _messages(hits)} == {"user"}
    assert {0, 4, 8} <= {mid for mid, _ in _messages(hits)}  # the move, its delay, the visit after it


def test_a_summary_question_gets_each_user_turn_with_the_reply_to_it(graph, embedder):
    driver, database = graph
    question = "Can you give me a summary of how my move to Lisbon progressed across our conversations?"
    hits = _messages(hybrid_search(driver, database, question, embedder, limit=6, kind="messages"))
    ids = [mid for mid, _ in hits]
    for position, (mid, role) in enumerate(hits[:-1]):
        if role == "user" and mid in (0, 4, 8):
            assert ids[position + 1] == mid + 1, ids  # the assistant's reply right after the turn
    assert {0, 1, 4, 5} <= set(ids), ids


def test_a_question_under_a_standing_rule_gets_the_rule(graph, embedder):
    from pytest_beam.memory.search import PLAIN_POLICY

    driver, database = graph
    question = "What should I pack first for the move?"
    before = hybrid_search(driver, database, question, embedder, limit=4, kind="messages", policy=PLAIN_POLICY)
    assert 2 not in [mid for mid, _ in _messages(before)]
    hits = hybrid_search(driver, database, question, embedder, limit=4, kind="messages")
    assert 2 in [mid for mid, _ in _messages(hits)]  # "Please always answer me in bullet points ..."
    assert hits[[h.id for h in hits].index(2)].ranks.get("rules") == 1


def test_topic_sessions_shows_the_topic_in_every_session_in_chat_order(box):
    result = box.call("topic_sessions", {"topic": "my move to Lisbon", "per_session": 1})
    doc = json.loads(result.text)
    assert not result.is_error and doc["topic"] == "my move to Lisbon"
    rows = [(m["session"], m["message_id"], m["role"]) for m in doc["messages"]]
    # one user turn per session, each followed by the reply to it, sessions in order
    assert [r for r in rows if r[2] == "user"] == [(1, 0, "user"), (2, 4, "user"), (3, 8, "user")]
    assert rows[:2] == [(1, 0, "user"), (1, 1, "assistant")]
    assert (2, 5, "assistant") in rows and (3, 9, "assistant") in rows
    assert result.message_ids == [0, 1, 4, 5, 8, 9]
    alone = json.loads(box.call("topic_sessions", {"topic": "my move to Lisbon", "per_session": 1,
                                                   "replies": False}).text)
    assert [m["message_id"] for m in alone["messages"]] == [0, 4, 8]
    assert box.call("topic_sessions", {"topic": "Lisbon", "replies": "yes"}).is_error


def test_session_outline_lists_the_user_turns_of_one_session(box):
    result = box.call("session_outline", {"session": 2})
    doc = json.loads(result.text)
    assert doc["session"] == 2 and doc["date"] == "2024-03-15"
    assert [row[0] for row in doc["user_turns"]] == [4, 6] and result.message_ids == [4, 6]
    assert doc["user_turns"][0][1].startswith("Update: the move to Lisbon is pushed back")
    assert len(doc["user_turns"][1][1]) <= 160 + len("…[cut: 999 more characters]")
    empty = json.loads(box.call("session_outline", {"session": 7}).text)
    assert empty["user_turns"] == [] and "sessions: [1, 2, 3]" in empty["note"]
    assert box.call("session_outline", {}).is_error

"""Ingest on a real Neo4j with the scripted model server (marked neo4j)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_beam.data.records import Document, Message

_MESSAGE_TAG = re.compile(r"\[message (\d+),")
_PAIR = re.compile(r"^Pair (\d+)", re.M)


def document(session: int, date: dt.date | None, messages: list[tuple[int, str, str]],
             conversation: str = "90") -> Document:
    return Document(conversation_id=conversation, name=f"session-{session}", session_number=session,
                    session_date=date, messages=tuple(Message(id=i, role=r, text=t) for i, r, t in messages))


def schema_name(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name")


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user")


@dataclass
class ScriptedIngestModel:
    """Responder for the scripted server: extraction by message id, resolution and updates by rule.

    `extractions[message_id]` is merged into the reply of every chunk holding that message;
    `same(entity_type, name_a, name_b) -> bool` answers resolution pairs;
    `relation(older_text, newer_text) -> str` answers update pairs;
    `broken` message ids get a reply that is not JSON.
    """

    extractions: dict[int, dict[str, list]] = field(default_factory=dict)
    same: Callable[[str, str, str], bool] = lambda t, a, b: False
    relation: Callable[[str, str], str] = lambda older, newer: "unrelated"
    broken: set[int] = field(default_factory=set)

    def __call__(self, body: dict[str, Any]) -> Any:
        name = schema_name(body)
        text = user_text(body)
        if name == "Extraction":
            ids = [int(i) for i in _MESSAGE_TAG.findall(text.split("<excerpt>", 1)[-1])]
            if self.broken & set(ids):
                return "this is not JSON at all"
            reply: dict[str, list] = {"entities": [], "statements": []}
            for i in dict.fromkeys(ids):
                for key in ("entities", "statements"):
                    reply[key].extend(self.extractions.get(i, {}).get(key, []))
            return reply
        if name == "ResolutionReply":
            entity_type = re.search(r"Entity type: (\w+)\.", text).group(1)
            decisions = []
            for block in re.split(r"\n(?=Pair \d+:)", text.split("\n\n", 1)[1]):
                number = int(_PAIR.match(block).group(1))
                a, b = re.findall(r'^  [AB]: "([^"]*)"', block, re.M)
                decisions.append({"pair": number, "same": bool(self.same(entity_type, a, b))})
            return {"decisions": decisions}
        if name == "UpdateReply":
            decisions = []
            for block in re.split(r"\n(?=Pair \d+ )", text):
                number = int(_PAIR.match(block).group(1))
                older = re.search(r"OLDER, session \d+: (.*)", block).group(1)
                newer = re.search(r"NEWER, session \d+: (.*)", block).group(1)
                decisions.append({"pair": number, "relation": self.relation(older, newer)})
            return {"decisions": decisions}
        return None


def requests_of(server: Any, name: str) -> list[Any]:
    return [r for r in server.chat_requests if schema_name(r.body or {}) == name]


def rows(driver: Any, database: str, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(query, database_=database, **params)
    return [r.data() for r in records]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# -- fixtures ----------------------------------------------------------------------------------------

import os  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels  # noqa: E402
from pytest_beam.memory.embeddings import make_embedder  # noqa: E402
from pytest_beam.memory.ingest import IngestConfig, ingest_documents  # noqa: E402
from tests.model_server import ScriptedModelServer  # noqa: E402

pytestmark = pytest.mark.neo4j
DATA = Path(os.environ.get("BEAM_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "beam"))
D1, D2, D3 = dt.date(2024, 3, 1), dt.date(2024, 4, 2), dt.date(2024, 5, 3)


@pytest.fixture(scope="module")
def embedder():
    return make_embedder("local")


@pytest.fixture
def scripted():
    model = ScriptedIngestModel()
    server = ScriptedModelServer(responder=model).start()
    client = ModelClient(EndpointConfig(base_url=server.base_url, max_retries=0, timeout_s=20.0),
                         RoleModels(agent="scripted-agent", extraction="scripted-extractor",
                                    resolution="scripted-resolver"))
    try:
        yield model, server, client
    finally:
        client.close()
        server.stop()


def ingest(clean, client, embedder, documents, **config):
    driver, database = clean
    return ingest_documents(driver, database, documents, client, embedder, IngestConfig(**config))


def fact(text, about, ids, kind="Fact", **extra):
    return {"type": kind, "text": text, "about": about, "message_ids": ids, **extra}


# -- tests ---------------------------------------------------------------------------------------------


def test_lite_slices_make_sessions_messages_and_chunks(clean_neo4j, scripted, embedder):
    if not (DATA / "chats").is_dir():
        pytest.skip(f"BEAM data not found at {DATA} (set BEAM_DATA)")
    from pytest_beam.data.sets import load_set

    _model, server, client = scripted
    documents = list(load_set("lite", DATA).documents["17"])
    seen = []
    report = ingest_documents(*clean_neo4j, documents, client, embedder, IngestConfig(),
                              progress=lambda done, total: seen.append((done, total)))
    driver, database = clean_neo4j
    assert report.chunks == 3 and report.empty_extractions == 0
    assert seen[0] == (0, 3) and seen[-1] == (3, 3)
    assert rows(driver, database, "MATCH (s:Session) RETURN s.number AS n, toString(s.date) AS d ORDER BY n") == [
        {"n": 1, "d": "2024-03-15"}, {"n": 3, "d": "2024-07-10"}]
    messages = rows(driver, database, """
        MATCH (m:Message:Searchable)-[:IN_SESSION]->(s:Session)
        RETURN m.id AS id, m.role AS role, m.order AS order, m.session AS session, s.number AS sn,
               size(m.embedding) AS dims, size(m.text) AS chars ORDER BY id""")
    assert [(m["id"], m["order"], m["session"], m["sn"], m["dims"]) for m in messages] == [
        (18, 0, 1, 1, 384), (156, 1, 3, 3, 384), (157, 2, 3, 3, 384)]
    assert [m["chars"] for m in messages] == [len(m.text) for d in documents for m in d.messages]
    chunks = rows(driver, database, """
        MATCH (c:Chunk)-[:CONTAINS]->(m:Message)
        WITH c, collect(m.id) AS contained
        RETURN c.id AS id, c.index AS index, c.session AS session, c.message_ids AS ids, contained
        ORDER BY index""")
    assert [(c["id"], c["index"], c["session"], c["ids"], sorted(c["contained"])) for c in chunks] == [
        ("17:s1:m18.1-m18.1", 0, 1, [18], [18]),
        ("17:s3:m156.1-m157.1", 1, 3, [156, 157], [156, 157]),
        ("17:s3:m157.2-m157.2", 2, 3, [157], [157]),
    ]
    assert len(requests_of(server, "Extraction")) == 3
    prompts = sorted(user_text(r.body).split("\n")[0] for r in requests_of(server, "Extraction"))
    assert prompts == ["Session 1, dated 2024-03-15. Message ids in this excerpt: 18.",
                       "Session 3, dated 2024-07-10. Message ids in this excerpt: 156, 157.",
                       "Session 3, dated 2024-07-10. Message ids in this excerpt: 157."]


def test_update_yields_supersedes_and_rerun_rebuilds_the_same_graph(clean_neo4j, scripted, embedder):
    model, server, client = scripted
    docs = [
        document(1, D1, [(0, "user", "My thesis deadline is May 1."), (1, "assistant", "Noted.")]),
        document(2, D2, [(2, "user", "The deadline moved from May 1 to May 15."), (3, "assistant", "Updated.")]),
    ]
    model.extractions = {
        0: {"entities": [{"type": "Event", "name": "thesis deadline", "description": "the thesis is due",
                          "date": "May 1"}],
            "statements": [fact("The thesis deadline is May 1.", ["thesis deadline"], [0])]},
        2: {"entities": [{"type": "Event", "name": "Thesis deadline", "date": "May 15"}],
            "statements": [fact("The thesis deadline is May 15.", ["Thesis deadline"], [2])]},
    }
    model.relation = lambda older, newer: "replaces" if "May 15" in newer and "May 1." in older else "unrelated"
    report = ingest(clean_neo4j, client, embedder, docs)
    driver, database = clean_neo4j
    got = rows(driver, database, """
        MATCH (n:Fact)-[:SUPERSEDES]->(o:Fact)
        RETURN n.text AS newer, n.superseded AS newer_superseded, n.session AS newer_session,
               o.text AS older, o.superseded AS older_superseded, o.superseded_in_session AS since""")
    assert got == [{"newer": "The thesis deadline is May 15.", "newer_superseded": False, "newer_session": 2,
                    "older": "The thesis deadline is May 1.", "older_superseded": True, "since": 2}]
    # both facts keep their sources, their session and one (merged) Event
    assert rows(driver, database, """
        MATCH (s:Fact)-[:FROM_MESSAGE]->(m:Message), (s)-[:STATED_IN]->(x:Session), (s)-[:ABOUT]->(e:Event)
        RETURN s.text AS text, m.id AS mid, x.number AS session, e.name AS event, e.date AS date ORDER BY mid""") == [
        {"text": "The thesis deadline is May 1.", "mid": 0, "session": 1, "event": "thesis deadline", "date": "May 1"},
        {"text": "The thesis deadline is May 15.", "mid": 2, "session": 2, "event": "thesis deadline", "date": "May 1"},
    ]
    assert report.relations_by_type["SUPERSEDES"] == 1
    assert report.entities_by_type == {"Event": 1, "Fact": 2}
    update_requests = requests_of(server, "UpdateReply")
    assert len(update_requests) == 1
    assert "OLDER, session 1: The thesis deadline is May 1." in user_text(update_requests[0].body)

    # No graph cache (issue 15 point 14: its marker could never hit in a real run, and its key
    # ignored the ingest code): a rerun into the same database builds the same graph again.
    again = ingest(clean_neo4j, client, embedder, docs)
    assert (again.chunks, again.entities_by_type, again.relations_by_type) == (
        report.chunks, report.entities_by_type, report.relations_by_type)
    assert rows(driver, database, "MATCH (k:IngestMarker) RETURN count(k) AS n") == [{"n": 0}]


def test_contradiction_yields_contradicts(clean_neo4j, scripted, embedder):
    model, _server, client = scripted
    docs = [
        document(1, D1, [(0, "user", "Sam's favourite colour is blue.")]),
        document(2, D2, [(1, "user", "Sam's favourite colour is green, and always was.")]),
    ]
    model.extractions = {
        0: {"entities": [{"type": "Person", "name": "Sam"}],
            "statements": [fact("Sam's favourite colour is blue.", ["Sam"], [0])]},
        1: {"entities": [{"type": "Person", "name": "Sam"}],
            "statements": [fact("Sam's favourite colour is green.", ["Sam"], [1])]},
    }
    model.relation = lambda older, newer: "contradicts"
    report = ingest(clean_neo4j, client, embedder, docs)
    driver, database = clean_neo4j
    assert rows(driver, database, """
        MATCH (n:Fact)-[:CONTRADICTS]->(o:Fact)
        RETURN n.text AS newer, o.text AS older, o.superseded AS superseded""") == [
        {"newer": "Sam's favourite colour is green.", "older": "Sam's favourite colour is blue.", "superseded": False}]
    assert "SUPERSEDES" not in report.relations_by_type


def test_standing_rule_links_to_its_topic(clean_neo4j, scripted, embedder):
    model, _server, client = scripted
    docs = [document(1, D1, [(0, "user", "From now on, always show code examples in Python."),
                             (1, "user", "I prefer short answers about cooking.")])]
    model.extractions = {
        0: {"entities": [{"type": "Topic", "name": "code examples", "description": "programming help"}],
            "statements": [fact("Always show code examples in Python.", ["code examples"], [0],
                                kind="Instruction", topic="code examples")]},
        1: {"entities": [],
            "statements": [fact("The user prefers short answers about cooking.", [], [1],
                                kind="Preference", topic="Cooking")]},
    }
    ingest(clean_neo4j, client, embedder, docs)
    driver, database = clean_neo4j
    assert rows(driver, database, """
        MATCH (r:Statement)-[:TRIGGERED_BY]->(t:Topic)
        RETURN r.type AS type, r.text AS rule, t.name AS topic ORDER BY type""") == [
        {"type": "Instruction", "rule": "Always show code examples in Python.", "topic": "code examples"},
        {"type": "Preference", "rule": "The user prefers short answers about cooking.", "topic": "Cooking"},
    ]
    # the chat's own words are cued too, with no model call (message_cues.py): search uses them
    assert rows(driver, database, "MATCH (m:Message) RETURN m.id AS id, m.cue AS cue ORDER BY id") == [
        {"id": 0, "cue": "instruction"}, {"id": 1, "cue": "preference"}]


def test_two_spellings_of_one_person_merge_keeping_every_edge(clean_neo4j, scripted, embedder):
    model, server, client = scripted
    docs = [
        document(1, D1, [(0, "user", "Dr. Ana Lopez reviewed my budget.")]),
        document(2, D2, [(1, "user", "Ana López approved the grant.")]),
        document(3, D3, [(2, "user", "Ana said the grant starts in June."),
                         (3, "user", "Carlos Ruiz joined the team.")]),
    ]
    model.extractions = {
        0: {"entities": [{"type": "Person", "name": "Dr. Ana Lopez", "description": "the user's advisor"}],
            "statements": [fact("Dr. Ana Lopez reviewed the user's budget.", ["Dr. Ana Lopez"], [0])]},
        1: {"entities": [{"type": "Person", "name": "Ana López"}],
            "statements": [fact("Ana López approved the grant.", ["Ana López"], [1])]},
        2: {"entities": [{"type": "Person", "name": "Ana"}],
            "statements": [fact("The grant starts in June.", ["Ana"], [2])]},
        3: {"entities": [{"type": "Person", "name": "Carlos Ruiz"}],
            "statements": [fact("Carlos Ruiz joined the team.", ["Carlos Ruiz"], [3])]},
    }
    model.same = lambda t, a, b: {a, b} <= {"Ana", "Dr. Ana Lopez", "Ana López"}
    report = ingest(clean_neo4j, client, embedder, docs)
    driver, database = clean_neo4j
    people = rows(driver, database, """
        MATCH (p:Person)
        OPTIONAL MATCH (s:Statement)-[:ABOUT]->(p)
        WITH p, collect(s.text) AS about
        OPTIONAL MATCH (p)-[:MENTIONED_IN]->(c:Chunk)
        RETURN p.name AS name, p.aliases AS aliases, p.summary AS summary, size(about) AS statements,
               collect(c.session) AS sessions ORDER BY name""")
    assert len(people) == 2
    carlos, ana = people
    assert ana["name"] == "Dr. Ana Lopez"  # the first mentioned spelling is kept
    assert sorted(ana["aliases"]) == ["Ana", "Ana López", "Dr. Ana Lopez"]
    assert ana["summary"] == "the user's advisor"
    assert ana["statements"] == 3 and sorted(ana["sessions"]) == [1, 2, 3]
    assert (carlos["name"], carlos["statements"], carlos["sessions"]) == ("Carlos Ruiz", 1, [3])
    assert report.entities_by_type["Person"] == 2
    # "Dr. Ana Lopez" / "Ana López" merged by name alone; only "Ana" needed the model
    asked = requests_of(server, "ResolutionReply")
    assert len(asked) == 1
    assert '"Ana"' in user_text(asked[0].body) and "Carlos" not in user_text(asked[0].body)
    assert any("merged 1 by name" in note and "1 by the model" in note for note in report.notes)


def test_resolution_questions_of_all_types_are_in_flight_together(clean_neo4j, scripted, embedder):
    # Types never merge across each other, so their questions need not wait for one another:
    # with a slow model, one round trip for every type rather than one per type.
    model, server, client = scripted
    server.latency = 0.3
    docs = [document(1, D1, [(0, "user", "Ana met me at the Acme Labs office."),
                             (1, "user", "Dr. Ana Lopez says Acme Research Labs is hiring.")])]
    model.extractions = {
        0: {"entities": [{"type": "Person", "name": "Ana"}, {"type": "Organization", "name": "Acme Labs"}],
            "statements": [fact("Ana met the user at the Acme Labs office.", ["Ana", "Acme Labs"], [0])]},
        1: {"entities": [{"type": "Person", "name": "Dr. Ana Lopez"},
                         {"type": "Organization", "name": "Acme Research Labs"}],
            "statements": [fact("Acme Research Labs is hiring.", ["Acme Research Labs"], [1])]},
    }
    model.same = lambda t, a, b: True
    ingest(clean_neo4j, client, embedder, docs, concurrency=4)
    asked = requests_of(server, "ResolutionReply")
    asked_types = sorted(re.search(r"Entity type: (\w+)\.", user_text(r.body)).group(1) for r in asked)
    assert asked_types == ["Organization", "Person"]
    assert server.max_in_flight >= 2
    starts = sorted(r.received_at for r in asked)
    assert starts[1] - starts[0] < 0.2, "the second type's question waited for the first type's reply"
    driver, database = clean_neo4j
    names = rows(driver, database, "MATCH (e:Entity) RETURN e.type AS type, count(*) AS n ORDER BY type")
    assert names == [{"type": "Organization", "n": 1}, {"type": "Person", "n": 1}]


def test_invalid_extraction_is_retried_once_then_counted_empty(clean_neo4j, scripted, embedder):
    model, server, client = scripted
    docs = [document(1, D1, [(0, "user", "x " * 600)]), document(2, D2, [(1, "user", "I live in Lisbon.")])]
    model.extractions = {1: {"entities": [{"type": "Place", "name": "Lisbon"}],
                             "statements": [fact("The user lives in Lisbon.", ["Lisbon"], [1])]}}
    model.broken = {0}
    report = ingest(clean_neo4j, client, embedder, docs)
    assert report.chunks == 2 and report.empty_extractions == 1
    extraction_calls = requests_of(server, "Extraction")
    broken_calls = [r for r in extraction_calls if "[message 0," in user_text(r.body)]
    assert len(broken_calls) == 2  # the first try and one retry
    assert "not valid for the required JSON schema" in broken_calls[1].body["messages"][-1]["content"]
    assert report.entities_by_type == {"Fact": 1, "Place": 1}
    assert any("empty extractions" in note and "90:s1:m0.1-m0.1" in note for note in report.notes)


def test_endpoint_error_propagates(clean_neo4j, embedder):
    from pytest_beam.llm import ModelEndpointError
    from tests.model_server import Reply

    server = ScriptedModelServer(default_reply=Reply.fail(400, "bad request")).start()
    client = ModelClient(EndpointConfig(base_url=server.base_url, max_retries=0, timeout_s=20.0),
                         RoleModels(agent="scripted-agent"))
    try:
        with pytest.raises(ModelEndpointError):
            ingest(clean_neo4j, client, embedder, [document(1, D1, [(0, "user", "hello")])])
    finally:
        client.close()
        server.stop()


def test_merging_entities_moves_every_edge_of_each_type_and_direction(clean_neo4j):
    from pytest_beam.memory import store

    driver, database = clean_neo4j
    driver.execute_query("""
        CREATE (k1:Entity:Person {id: 'k1', name: 'Ana', aliases: ['Ana']}),
               (d1:Entity:Person {id: 'd1', name: 'Ana L', summary: 'a doctor'}),
               (k2:Entity:Place {id: 'k2', name: 'Lima'}), (d2:Entity:Place {id: 'd2', name: 'Lima, Peru'}),
               (s:Statement {id: 's'}), (c:Chunk {id: 'c'}), (c2:Chunk {id: 'c2'}),
               (s)-[:ABOUT {role: 'subject'}]->(d1), (d1)-[:MENTIONED_IN]->(c), (k1)-[:MENTIONED_IN]->(c),
               (d1)-[:MENTIONED_IN]->(c2), (d1)-[:LIVES_IN {since: 2020}]->(d2), (k1)-[:KNOWS]->(d1)
    """, database_=database)
    store.merge_entities(driver, database, [{"keep": "k1", "drop": "d1"}, {"keep": "k2", "drop": "d2"}])
    edges = rows(driver, database, """
        MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS type, properties(r) AS props, b.id AS b
        ORDER BY a, type, b""")
    assert edges == [
        {"a": "k1", "type": "LIVES_IN", "props": {"since": 2020}, "b": "k2"},  # both ends were merged
        {"a": "k1", "type": "MENTIONED_IN", "props": {}, "b": "c"},  # not doubled
        {"a": "k1", "type": "MENTIONED_IN", "props": {}, "b": "c2"},
        {"a": "s", "type": "ABOUT", "props": {"role": "subject"}, "b": "k1"},
    ]  # the edge between keep and drop went with the drop
    ana = rows(driver, database, "MATCH (e:Entity) RETURN e.id AS id, e.aliases AS aliases, e.summary AS summary "
                                 "ORDER BY id")
    assert ana == [{"id": "k1", "aliases": ["Ana", "Ana L"], "summary": "a doctor"},
                   {"id": "k2", "aliases": ["Lima, Peru"], "summary": None}]
    with pytest.raises(ValueError, match="chain"):
        store.merge_entities(driver, database, [{"keep": "k1", "drop": "k2"}, {"keep": "k2", "drop": "x"}])

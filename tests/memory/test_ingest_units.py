"""The pure parts of ingest: names, blocking, schemas, prompts, embeddings (no Neo4j)."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from pytest_beam.data.records import Document, Message
from pytest_beam.memory.chunking import chunk_documents
from pytest_beam.memory.extraction_schema import Extraction, ResolutionReply
from pytest_beam.memory.name_forms import normalise_name
from pytest_beam.memory.prompts_ingest import extraction_messages, resolution_messages
from pytest_beam.memory.resolution import Candidate, candidate_pairs, classify
from pytest_beam.memory.temporal import update_candidates


def test_normalise_name_folds_accents_case_titles_and_suffixes():
    assert normalise_name("Dr. Ana Lopez", "Person") == normalise_name("Ana López", "Person") == "ana lopez"
    assert normalise_name("Dr. Ana Lopez", "Topic") == "dr ana lopez"  # titles only drop for people
    assert normalise_name("Acme, Inc.", "Organization") == "acme"
    assert normalise_name("The Louvre", "Place") == "louvre"


def _entity(i, name, vector=None, kind="Person"):
    return {"id": f"{kind}:{name}", "name": name, "norm_name": normalise_name(name, kind), "summary": "",
            "embedding": vector, "mentions": 1, "first": i}


def test_classify_clear_merge_ambiguous_and_apart():
    def pair(a, b, cos=0.0):
        from rapidfuzz import fuzz
        ea, eb = _entity(0, a), _entity(1, b)
        return classify(Candidate(ea, eb, fuzz.ratio(ea["norm_name"], eb["norm_name"]) / 100,
                                  fuzz.token_set_ratio(ea["norm_name"], eb["norm_name"]) / 100, cos))

    assert pair("Alexandra Fitzgerald", "Alexandra Fitzgeral") == "merge"
    assert pair("Ana Lopez", "Ana Lopes") == "ask"  # short names: one letter may be another person
    assert pair("Ana", "Ana Lopez") == "ask"
    assert pair("Python 3", "Python 2") == "ask"  # numbers differ: never a clear merge
    assert pair("Ana Lopez", "Carlos Ruiz") == "apart"


def test_candidate_pairs_grow_linearly():
    def unit(i, n=8):
        v = [math.sin((i + 1) * (k + 1) * 0.37) for k in range(n)]
        norm = math.sqrt(sum(x * x for x in v))
        return [x / norm for x in v]

    for size in (50, 400):
        entities = [_entity(i, f"Person{i} Common", unit(i)) for i in range(size)]
        pairs = candidate_pairs(entities, per_entity=3)
        assert len(pairs) <= 3 * size
        assert len({(c.left["id"], c.right["id"]) for c in pairs}) == len(pairs)


def test_update_candidates_pair_older_with_newer_about_the_same_entity():
    def st(i, text, chunk, order, about, vec):
        return {"id": f"s{i}", "type": "Fact", "text": text, "session": order + 1, "chunk": chunk, "order": order,
                "unit": None, "embedding": vec, "about": about, "about_names": about}

    same, other = [1.0, 0.0], [0.0, 1.0]
    statements = [
        st(0, "The deadline is May 1.", "c0", 0, ["Event:deadline"], same),
        st(1, "The user likes tea.", "c0", 0, ["Topic:tea"], other),
        st(2, "The deadline is May 15.", "c1", 1, ["Event:deadline"], same),
        st(3, "The deadline is May 15.", "c2", 2, ["Event:deadline"], same),  # repeated: no update of s2
    ]
    pairs = [(p.older["id"], p.newer["id"]) for p in update_candidates(statements)]
    assert pairs == [("s0", "s2"), ("s0", "s3")]


def test_extraction_schema_is_bounded_and_lenient_about_length():
    schema = Extraction.model_json_schema()
    entity = schema["$defs"]["ExtractedEntity"]["properties"]
    statement = schema["$defs"]["ExtractedStatement"]["properties"]
    assert entity["name"]["maxLength"] == 80 and statement["text"]["maxLength"] == 300
    assert schema["properties"]["entities"]["maxItems"] == 25 and statement["about"]["maxItems"] == 4
    value = Extraction.model_validate({
        "entities": [{"type": "Person", "name": "x" * 500}],
        "statements": [{"type": "Measure", "text": "runs 5 km", "value": 5, "unit": "km", "message_ids": [1]}],
    })
    assert len(value.entities[0].name) == 80 and value.statements[0].value == "5"
    with pytest.raises(ValueError):
        Extraction.model_validate({"entities": [{"type": "Animal", "name": "cat"}]})
    assert ResolutionReply.model_json_schema()["properties"]["decisions"]["maxItems"] == 50


def test_prompts_are_deterministic_and_state_session_date_and_ids():
    document = Document(conversation_id="5", name="session-2", session_number=2, session_date=dt.date(2024, 2, 29),
                        messages=(Message(id=7, role="user", text="Hi"), Message(id=8, role="assistant", text="Hello")))
    chunk = chunk_documents([document])[0]
    first, again = extraction_messages(chunk), extraction_messages(chunk)
    assert first == again
    assert first[1]["content"].startswith("Session 2, dated 2024-02-29. Message ids in this excerpt: 7, 8.")
    assert "[message 7, user] Hi" in first[1]["content"]
    pairs = [({"name": "Ana", "summary": "", "sessions": [3, 1]},
              {"name": "Ana Lopez", "summary": "x", "sessions": [2]})]
    text = resolution_messages("Person", pairs)[1]["content"]
    assert 'A: "Ana" (no description; sessions 1, 3)' in text


def test_local_embedder_gives_unit_vectors_that_rank_related_text_higher():
    from pytest_beam.memory.embeddings import cosine, make_embedder

    embedder = make_embedder("local")
    assert make_embedder("local")._model is embedder._model  # one model per process
    vectors = embedder.embed(["The deadline moved from May 1 to May 15.",
                              "The project is now due on the fifteenth of May.",
                              "I like to eat pizza with my friends.", ""])
    assert len(vectors) == 4 and all(len(v) == embedder.dimensions == 384 for v in vectors)
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-4 for v in vectors)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3
    assert embedder.embed(["The deadline moved from May 1 to May 15."])[0] == pytest.approx(vectors[0], abs=1e-5)


def test_local_model_is_quantized_once_and_stays_close_to_the_export(tmp_path):
    from pytest_beam.memory.embeddings import (
        EmbeddingUnavailable,
        LocalEmbedder,
        _LocalModel,
        cosine,
        export_model_path,
        quantized_model,
    )

    built = quantized_model(tmp_path)
    assert built.parent == tmp_path / "embeddings" and built.name.endswith("-int8-matmul.onnx")
    stamp = built.stat().st_mtime_ns
    assert quantized_model(tmp_path) == built and built.stat().st_mtime_ns == stamp  # built once
    assert [p.name for p in built.parent.iterdir() if p.suffix == ".onnx"] == [built.name]  # no leftovers
    texts = ["The deadline moved from May 1 to May 15.", "Ana Lopez: the user's sister",
             "I'm kinda stressed about managing my time effectively with my birthday coming up."]
    int8 = _LocalModel(built).embed(texts, 16)
    export = _LocalModel(export_model_path()).embed(texts, 16)
    assert all(0.97 < cosine(a, b) < 0.99999 for a, b in zip(int8, export))  # moved, but barely
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache folder should be")
    with pytest.raises(EmbeddingUnavailable, match=r"BEAM_CACHE_DIR.*local-export"):
        quantized_model(blocked)
    assert LocalEmbedder(quantized=False).name == "local:all-MiniLM-L6-v2-int8-onnx"
    assert LocalEmbedder().name == "local:all-MiniLM-L6-v2-int8-matmul-onnx"


def test_endpoint_embedder_uses_the_model_client():
    from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
    from pytest_beam.memory.embeddings import EmbeddingUnavailable, make_embedder
    from tests.model_server import ScriptedModelServer

    with pytest.raises(EmbeddingUnavailable):
        make_embedder("remote")
    with ScriptedModelServer(embedding_dim=16) as server:
        client = ModelClient(EndpointConfig(base_url=server.base_url, max_retries=0), RoleModels(agent="a"))
        embedder = make_embedder("endpoint:embed-small", client)
        vectors = embedder.embed(["a", "b", "c"])
        assert embedder.name == "endpoint:embed-small" and embedder.dimensions == 16
        assert len(vectors) == 3 and server.embedding_requests[0].body["model"] == "embed-small"
        client.close()


def test_a_message_vector_is_made_from_its_first_words():
    from pytest_beam.memory.ingest import MESSAGE_EMBED_WORDS, message_embedding_text

    words = [f"w{i}" for i in range(MESSAGE_EMBED_WORDS + 30)]
    text = "  ".join(words[:5]) + "\n\n" + " ".join(words[5:])
    assert message_embedding_text(text) == " ".join(words[:MESSAGE_EMBED_WORDS])
    assert message_embedding_text("short  message\nhere") == "short message here"
    assert message_embedding_text(text, 3) == "w0 w1 w2"
    assert message_embedding_text("x" * 5000, 0) == "x" * 2000  # 0: whole (the model cuts it)


def test_graph_writes_refuse_unknown_types_before_touching_the_graph():
    from pytest_beam.memory import store

    with pytest.raises(ValueError, match=r"entity rows with unknown type\(s\) \['Planet'\]"):
        store.write_entities(None, "neo4j", [{"type": "Person"}, {"type": "Planet"}])
    with pytest.raises(ValueError, match=r"statement rows with unknown type\(s\) \['Rumour'\]"):
        store.write_statements(None, "neo4j", [{"type": "Rumour"}])


def test_entity_vectors_forecast_the_text_resolution_reads_and_embed_it_once():
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    from pytest_beam.memory.ingest import _ChunkRows, _EntityVectors

    class Counting:
        name, dimensions = "counting", 1

        def __init__(self):
            self.seen = []

        def embed(self, texts):
            self.seen.extend(texts)
            return [[float(len(t))] for t in texts]

    def written(*entities):
        return [_ChunkRows(SimpleNamespace(empty=False), [dict(e) for e in entities], [])]

    inner = Counting()
    vectors = _EntityVectors(inner)
    with ThreadPoolExecutor(1) as pool:
        # as write_entities keeps them: the first name, the first non-empty description
        first = vectors.settled_texts(written({"id": "p:ana", "name": "Ana", "summary": ""},
                                              {"id": "p:bo", "name": "Bo", "summary": "a cook"}))
        assert first == ["Bo: a cook"]  # Ana's text may still gain a description
        vectors.submit(pool, first)
        later = vectors.settled_texts(written({"id": "p:ana", "name": "ANA", "summary": "the sister"},
                                              {"id": "p:bo", "name": "Bo", "summary": "a chef"}))
        assert later == ["Ana: the sister"]
        vectors.submit(pool, later)
        assert vectors.settled_texts(written({"id": "t:x", "name": "X", "summary": ""}), final=True) == ["X"]
        got = vectors.embed(["Ana: the sister", "Bo: a cook", "Cy"])  # Cy was never forecast
        vectors.check()
    assert got == [[15.0], [10.0], [2.0]]
    assert sorted(inner.seen) == ["Ana: the sister", "Bo: a cook", "Cy"]  # each embedded once


def test_the_extraction_prompt_gives_no_example_to_copy():
    """Issue 16 point 1: under a JSON-schema grammar a small model copied the prompt's example
    statements and names into its replies; the prompt now describes the kinds without examples."""
    import re

    from pytest_beam.memory.prompts_ingest import EXTRACTION_SYSTEM

    assert re.findall(r'"[^"]*"', EXTRACTION_SYSTEM) == []  # no quoted example of any kind
    for former in ("thesis deadline", "May 1", "5 km", "code examples in Python", "budget planning",
                   "my manager", "next Friday", "Python testing"):
        assert former not in EXTRACTION_SYSTEM, former
    assert "write each\nstatement and each entity once" in EXTRACTION_SYSTEM


def test_repeated_statements_and_entities_in_one_reply_are_dropped_and_counted():
    from pytest_beam.memory.extraction import ChunkExtraction, repeats_note, rows_of

    document = Document(conversation_id="5", name="session-1", session_number=1, session_date=dt.date(2024, 3, 1),
                        messages=(Message(id=0, role="user", text="I run 5 km on Tuesdays."),))
    chunk = chunk_documents([document])[0]
    same = {"type": "Measure", "text": "The user runs 5 km on Tuesdays.", "about": ["running"], "message_ids": [0],
            "value": "5", "unit": "km"}
    reply = Extraction.model_validate({
        "entities": [{"type": "Topic", "name": "running"}] * 3 + [{"type": "Topic", "name": "Tuesdays"}],
        "statements": [same, dict(same, text="the user  runs 5 km on tuesdays."), same,
                       {"type": "Fact", "text": "The user runs on Tuesdays.", "about": ["running"],
                        "message_ids": [0]}]})
    done = ChunkExtraction(chunk, reply)
    entities, statements = rows_of(done)
    assert [e["name"] for e in entities] == ["running", "Tuesdays"]
    assert [s["text"] for s in statements] == ["The user runs 5 km on Tuesdays.", "The user runs on Tuesdays."]
    assert [s["id"] for s in statements] == [f"{chunk.id}#0", f"{chunk.id}#3"]
    assert (done.repeated_statements, done.repeated_entities) == (2, 2)
    clean = ChunkExtraction(chunk, Extraction())
    rows_of(clean)
    assert repeats_note([clean]) is None
    assert repeats_note([done, clean]) == (f"repeats dropped from extraction replies: 2 statements, 2 entities, "
                                           f"in 1 of 2 chunks ({chunk.id})")

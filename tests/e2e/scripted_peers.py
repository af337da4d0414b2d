"""The scripted model extended to the prompts Mem0 and Graphiti send (a test double, nothing more).

Mem0's extraction (its ADDITIVE extraction prompt, a JSON object) gets one memory per user message
of the call: that message's first sentence. Graphiti's prompts are told apart by the JSON schema
each sends; the double extracts the speaker and one entity per user message, one fact per user
message (its first sentence, speaker -> entity), and answers every dedupe, summary and timestamp
prompt with "nothing to change". Everything else goes to the BEAM double (baselines' and recalled
prompts end with "Question: ...", which it answers; the judge as always).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.e2e.scripted_beam import ScriptedBeamModel, _schema_name, _text
from tests.model_server import Reply, tool_call
from tests.systems.test_through_the_harness import BaselineAwareModel

MEM0_MARKER = "## New Messages"
GRAPHITI_SCHEMAS = frozenset({"ExtractedEntities", "ExtractedEdges", "NodeResolutions", "NodeDuplicate",
                              "EdgeDuplicate", "SummarizedEntities", "EdgeTimestamps", "BatchEdgeTimestamps", "Summary",
                              "SummaryDescription", "CombinedExtraction", "SagaSummary"})
_CURRENT = re.compile(r"<CURRENT[ _]MESSAGE>\s*(.*?)\s*</CURRENT[ _]MESSAGE>", re.S)


def first_sentence(text: str, limit: int = 200) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0][:limit]


def mem0_extraction(prompt: str) -> dict[str, Any]:
    new = prompt.rsplit(MEM0_MARKER, 1)[1].split("\n## ", 1)[0]  # the user prompt (last) holds the messages
    memories = []
    for line in new.strip().splitlines():
        if line.startswith("user: "):
            memories.append({"id": str(len(memories)), "text": "User said: " + first_sentence(line[len("user: "):]),
                             "attributed_to": "user"})
    return {"memory": memories}


def current_message(text: str) -> tuple[str, str]:
    found = _CURRENT.search(text)
    body = found.group(1) if found else ""
    speaker, _, said = body.partition(": ")
    return speaker.strip() or "user", said.strip()


def graphiti_entity(said: str) -> str:
    """A stable entity per message: its first capitalised word run that is not the first word."""
    words = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", said)
    named = [w for w in words if w not in ("I", "I'm", "I've")]
    return named[1] if len(named) > 1 else (named[0] if named else "the chat")


def graphiti_reply(schema: str, text: str) -> dict[str, Any] | None:
    speaker, said = current_message(text)
    if schema == "ExtractedEntities":
        entities = [{"name": speaker, "entity_type_id": 0, "episode_indices": [0]}]
        if speaker == "user" and said:
            entities.append({"name": graphiti_entity(said), "entity_type_id": 0, "episode_indices": [0]})
        return {"extracted_entities": entities}
    if schema == "ExtractedEdges":
        if speaker != "user" or not said:
            return {"edges": []}
        return {"edges": [{"source_entity_name": speaker, "target_entity_name": graphiti_entity(said),
                           "relation_type": "MENTIONS", "fact": "User said: " + first_sentence(said)}]}
    if schema == "NodeResolutions":
        listed = text.split("<ENTITIES>", 1)[-1].split("</ENTITIES>", 1)[0]
        found = re.findall(r'"id":\s*(\d+),\s*"name":\s*"((?:[^"\\]|\\.)*)"', listed)
        return {"entity_resolutions": [{"id": int(i), "name": name, "duplicate_candidate_id": -1} for i, name in found]}
    if schema == "NodeDuplicate":
        return {"id": 0, "name": speaker, "duplicate_candidate_id": -1}
    if schema == "EdgeDuplicate":
        return {"duplicate_facts": [], "contradicted_facts": []}
    if schema == "SummarizedEntities":
        return {"summaries": []}
    if schema in ("EdgeTimestamps",):
        return {"valid_at": None, "invalid_at": None}
    if schema in ("Summary", "SummaryDescription"):
        return {"summary": "", "description": ""}
    return None


class PeerAwareModel(BaselineAwareModel):
    """The BEAM double plus Mem0's and Graphiti's ingest prompts; counts what it served per kind."""

    def __init__(self, answers: dict[str, str] | None = None) -> None:
        super().__init__(answers)
        self.served: dict[str, int] = {}
        self.unknown: list[str] = []

    def _count(self, kind: str) -> None:
        self.served[kind] = self.served.get(kind, 0) + 1

    def __call__(self, body: dict[str, Any]) -> Reply | dict | str:
        schema = _schema_name(body)
        text = _text(body)
        if MEM0_MARKER in text and (body.get("response_format") or {}).get("type") == "json_object":
            self._count("mem0")
            return Reply.json_object(mem0_extraction(text))
        if schema in GRAPHITI_SCHEMAS:
            reply = graphiti_reply(str(schema), text)
            if reply is not None:
                self._count("graphiti")
                return Reply.json_object(reply)
            self.unknown.append(str(schema))
            return Reply.fail(400, f"scripted double: no answer for Graphiti's schema {schema}")
        reply = self.issue_44(body, schema, text)
        if reply is not None:
            return reply
        return super().__call__(body)

    def issue_44(self, body: dict[str, Any], schema: str | None, text: str) -> Reply | None:
        """The prompts of LightRAG, neo4j-graphrag, LangMem, Hindsight and Cognee; None for any other."""
        if LIGHTRAG_EXTRACT in text:
            self._count("lightrag")
            return Reply.say(lightrag_extraction(text))
        if LIGHTRAG_KEYWORDS in text:
            self._count("lightrag")
            return Reply.json_object(lightrag_keywords(text))
        if schema == "Neo4jGraph":
            self._count("neo4j-graphrag")
            return Reply.json_object(neo4j_graph(text))
        if HINDSIGHT_EXTRACT in text:
            self._count("hindsight")
            return Reply.json_object(hindsight_facts(text))
        if COGNEE_GRAPH in text:
            self._count("cognee")
            return Reply.json_object(cognee_graph(text))
        if COGNEE_SUMMARY in text:
            self._count("cognee")
            return Reply.json_object(cognee_summary(text))
        if body.get("tools") and "long-term memory manager" in text:
            self._count("langmem")
            calls = langmem_calls(body)
            if calls:
                return Reply.calls(*(tool_call(c["name"], c["arguments"]) for c in calls))
            self.unknown.append("langmem: " + ", ".join(t["function"]["name"] for t in body["tools"]))
            return Reply.fail(400, "scripted double: no answer for this LangMem request")
        return None


__all__ = ["PeerAwareModel", "ScriptedBeamModel", "mem0_extraction", "graphiti_reply"]


# ---- issue 44: LightRAG, neo4j-graphrag, LangMem (Hindsight's and Cognee's prompts further below) ----

_TAGGED = re.compile(r"\[message (\d+)\] (user|assistant): (.*?)(?=\n\n\[message |\n```|\Z)", re.S)
LIGHTRAG_EXTRACT = "Knowledge Graph Specialist responsible for extracting entities and relationships"
LIGHTRAG_KEYWORDS = "expert keyword extractor"
LIGHTRAG_DELIMITER = "<|#|>"


def tagged_user_sentences(text: str) -> list[tuple[int, str]]:
    """(message id, first sentence) of each user message tagged `[message N] user: ...` in the text."""
    return [(int(mid), first_sentence(said)) for mid, role, said in _TAGGED.findall(text) if role == "user"]


def lightrag_extraction(text: str) -> str:
    """One person (the user) and one entity per user message, linked by that message's first sentence."""
    rows = [f"entity{LIGHTRAG_DELIMITER}User{LIGHTRAG_DELIMITER}person{LIGHTRAG_DELIMITER}The user of the chat."]
    for _mid, sentence in tagged_user_sentences(text.split("---Input Text---")[-1]):
        entity = graphiti_entity(sentence)
        rows.append(f"entity{LIGHTRAG_DELIMITER}{entity}{LIGHTRAG_DELIMITER}concept{LIGHTRAG_DELIMITER}"
                    f"User said: {sentence}")
        rows.append(f"relation{LIGHTRAG_DELIMITER}User{LIGHTRAG_DELIMITER}{entity}{LIGHTRAG_DELIMITER}mentions"
                    f"{LIGHTRAG_DELIMITER}User said: {sentence}")
    return "\n".join([*rows, "<|COMPLETE|>"])


def lightrag_keywords(text: str) -> dict[str, Any]:
    query = text.rsplit("User Query:", 1)[-1].strip().split("\n", 1)[0]
    words = [w for w in re.findall(r"[A-Za-z]{4,}", query)][:6]
    return {"high_level_keywords": words[:2], "low_level_keywords": words}


def neo4j_graph(text: str) -> dict[str, Any]:
    """The user and one Topic per user message in the chunk, the user linked to each by MENTIONS."""
    nodes = [{"id": "0", "label": "Person", "properties": {"name": "User"}}]
    relationships = []
    for k, (_mid, sentence) in enumerate(tagged_user_sentences(text), start=1):
        nodes.append({"id": str(k), "label": "Topic", "properties": {"name": graphiti_entity(sentence)}})
        relationships.append({"start_node_id": "0", "end_node_id": str(k), "type": "MENTIONS", "properties": {}})
    return {"nodes": nodes, "relationships": relationships}


_LANGMEM_HUMAN = re.compile(r"=+ Human Message =+\s*\[session \d+, [0-9-]+\] (.*?)(?=\n=+ |</|\Z)", re.S)


def langmem_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    """LangMem's extraction (trustcall): a new `Memory` per user message of the call, the first sentence."""
    names = [t["function"]["name"] for t in body.get("tools") or []]
    if "Memory" not in names:
        return []
    said = [first_sentence(m) for m in _LANGMEM_HUMAN.findall(_text(body))]
    return [{"name": "Memory", "arguments": {"content": "User said: " + s}} for s in said]


HINDSIGHT_EXTRACT = "Extract SIGNIFICANT facts from text"


def json_session_user_sentences(text: str) -> list[tuple[int, str]]:
    """(message id, first sentence) of each user message in a session retained as a JSON list."""
    body = text.rsplit("Content:", 1)[-1].strip()
    try:
        messages = json.loads(body[body.index("["):body.rindex("]") + 1])
    except ValueError:  # a chunk of a longer session: its messages are cut, take what parses
        found = re.findall(r'\{"message_id": \d+, "role": "user", "content": "(?:[^"\\]|\\.)*"\}', body)
        messages = [json.loads(m) for m in found]
    return [(int(m["message_id"]), first_sentence(m["content"])) for m in messages if m.get("role") == "user"]


def hindsight_facts(text: str) -> dict[str, Any]:
    """One world fact per user message of the chunk: its first sentence, about the user."""
    facts = [{"what": "User said: " + sentence, "when": "N/A", "where": "N/A", "who": "user", "why": "N/A",
              "fact_type": "world", "fact_kind": "conversation", "entities": ["user", graphiti_entity(sentence)]}
             for _mid, sentence in json_session_user_sentences(text)]
    return {"facts": facts}


COGNEE_SUMMARY = "Summarize the chunk for retrieval."
COGNEE_GRAPH = "extracting information in structured formats to build a knowledge graph"


def cognee_graph(text: str) -> dict[str, Any]:
    """The user and one concept per user message of the chunk, the user linked to each."""
    chunk = text.split("Your previous response failed", 1)[0]
    nodes = [{"id": "user", "name": "User", "type": "Person", "description": "The user of the chat"}]
    edges = []
    for _mid, sentence in tagged_user_sentences(chunk):
        entity = graphiti_entity(sentence)
        nodes.append({"id": entity.lower(), "name": entity, "type": "Concept", "description": "User said: " + sentence})
        edges.append({"source_node_id": "user", "target_node_id": entity.lower(), "relationship_name": "mentions",
                      "description": "User said: " + sentence})
    return {"nodes": nodes, "edges": edges}


def cognee_summary(text: str) -> dict[str, Any]:
    said = [sentence for _mid, sentence in tagged_user_sentences(text)]
    return {"summary": "User said: " + (said[0] if said else "nothing the user said"), "description": ""}

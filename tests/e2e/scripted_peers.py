"""The scripted model extended to the prompts Mem0 and Graphiti send (a test double, nothing more).

Mem0's extraction (its ADDITIVE extraction prompt, a JSON object) gets one memory per user message
of the call: that message's first sentence. Graphiti's prompts are told apart by the JSON schema
each sends; the double extracts the speaker and one entity per user message, one fact per user
message (its first sentence, speaker -> entity), and answers every dedupe, summary and timestamp
prompt with "nothing to change". Everything else goes to the BEAM double (baselines' and recalled
prompts end with "Question: ...", which it answers; the judge as always).
"""

from __future__ import annotations

import re
from typing import Any

from tests.e2e.scripted_beam import ScriptedBeamModel, _schema_name, _text
from tests.model_server import Reply
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
        return super().__call__(body)


__all__ = ["PeerAwareModel", "ScriptedBeamModel", "mem0_extraction", "graphiti_reply"]

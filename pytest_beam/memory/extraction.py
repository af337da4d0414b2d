"""One extraction call per chunk, and its reply turned into graph rows.

A reply that is not valid for the schema (after the model layer's one retry) counts as an empty
extraction; every other model error (endpoint down, spend cap) propagates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..services.access import CypherRow
from .chunking import Chunk
from .extraction_schema import Extraction
from .graph_schema import RULE_TYPES
from .name_forms import normalise_name
from .prompts_ingest import extraction_messages

if TYPE_CHECKING:
    from .model_protocols import StructuredModels


@dataclass
class ChunkExtraction:
    chunk: Chunk
    extraction: Extraction
    empty_reason: str | None = None  # set when the reply failed validation
    notes: list[str] = field(default_factory=list)
    # exact repeats dropped from the reply (a model at temperature 0 may repeat one statement
    # until the schema's maxItems): statements with the same text, entities with the same type and name
    repeated_statements: int = 0
    repeated_entities: int = 0

    @property
    def empty(self) -> bool:
        return self.empty_reason is not None


def extract_chunk(models: StructuredModels, chunk: Chunk, max_tokens: int) -> ChunkExtraction:
    from ..llm.errors import StructuredOutputError

    try:
        result = models.structured(role="extraction", messages=extraction_messages(chunk),
                                   schema=Extraction, max_tokens=max_tokens)
    except StructuredOutputError as exc:
        return ChunkExtraction(chunk, Extraction(), empty_reason=exc.validation_error[:300])
    return ChunkExtraction(chunk, result.value)


def entity_id(entity_type: str, name: str) -> str:
    return f"{entity_type}:{' '.join(name.split())}"


def statement_id(chunk: Chunk, index: int) -> str:
    return f"{chunk.id}#{index}"


def rows_of(done: ChunkExtraction) -> tuple[list[CypherRow], list[CypherRow]]:
    """(entity rows, statement rows) of one chunk, in reply order; ids are deterministic."""
    chunk, extraction = done.chunk, done.extraction
    entities: dict[str, CypherRow] = {}
    by_norm: dict[str, str] = {}  # norm name -> entity id, first seen wins
    topics_by_norm: dict[str, str] = {}

    def add_entity(entity_type: str, name: str, summary: str = "", date: str | None = None) -> str | None:
        name = " ".join(name.split())
        norm = normalise_name(name, entity_type)
        if not norm:
            return None
        eid = entity_id(entity_type, name)
        if eid not in entities:
            entities[eid] = {"id": eid, "type": entity_type, "name": name, "norm_name": norm,
                             "summary": summary, "date": date if entity_type == "Event" else None,
                             "chunk": chunk.id}
        by_norm.setdefault(norm, eid)
        if entity_type == "Topic":
            topics_by_norm.setdefault(norm, eid)
        return eid

    for entity in extraction.entities:
        if entity_id(entity.type, " ".join(entity.name.split())) in entities:
            done.repeated_entities += 1
        add_entity(entity.type, entity.name, entity.description, entity.date)

    allowed_ids = set(chunk.message_ids)
    statements: list[CypherRow] = []
    seen_texts: set[str] = set()
    for index, st in enumerate(extraction.statements):
        text = " ".join(st.text.split())
        if not text:
            continue
        if text.casefold() in seen_texts:
            done.repeated_statements += 1
            continue
        seen_texts.add(text.casefold())
        about: list[str] = []
        for name in st.about:
            norm = normalise_name(name, "Topic")
            eid = by_norm.get(norm) or next(
                (i for n, i in by_norm.items() if normalise_name(name, entities[i]["type"]) == n), None)
            if eid is None:  # an entity the reply did not list: keep it, as a Topic
                eid = add_entity("Topic", name)
            if eid and eid not in about:
                about.append(eid)
        topic_id = None
        if st.type in RULE_TYPES:
            if st.topic:
                norm = normalise_name(st.topic, "Topic")
                topic_id = topics_by_norm.get(norm) or add_entity("Topic", st.topic)
            else:
                topic_id = next((e for e in about if entities[e]["type"] == "Topic"), None)
        sources = [i for i in dict.fromkeys(st.message_ids) if i in allowed_ids]
        if len(sources) < len(set(st.message_ids)):
            done.notes.append(f"{chunk.id}: dropped source ids not in the chunk")
        statements.append({
            "id": statement_id(chunk, index), "type": st.type, "text": text,
            "subject": "; ".join(entities[e]["name"] for e in about) or None,
            "value": st.value if st.type == "Measure" else None,
            "unit": st.unit if st.type == "Measure" else None,
            "session": chunk.session_number, "chunk": chunk.id, "order": chunk.index,
            "message_ids": sources or list(chunk.message_ids),
            "about": about, "topic": topic_id,
        })
    return list(entities.values()), statements


def repeats_note(done: list[ChunkExtraction]) -> str | None:
    """The ingest report's line on repeats dropped from extraction replies, or None when none were."""
    hit = [d for d in done if d.repeated_statements or d.repeated_entities]
    if not hit:
        return None
    statements = sum(d.repeated_statements for d in hit)
    entities = sum(d.repeated_entities for d in hit)
    return (f"repeats dropped from extraction replies: {statements} statements, {entities} entities, in "
            f"{len(hit)} of {len(done)} chunks ({', '.join(d.chunk.id for d in hit)})")

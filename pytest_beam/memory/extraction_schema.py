"""Pydantic schemas of the model replies during ingest: extraction, entity resolution, updates.

Every string has a `maxLength` and every list a `maxItems` (a small local model under a grammar
pads strings up to whatever it is allowed). Validation is lenient about length only: an
over-long string or list is cut to its bound rather than failing the whole reply; a wrong type
name, a missing field or a non-JSON reply still fails (and is retried once by the model layer).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .graph_schema import ENTITY_TYPES, STATEMENT_TYPES

NAME_MAX = 80
DESCRIPTION_MAX = 200
STATEMENT_MAX = 300
DATE_MAX = 40
VALUE_MAX = 40
UNIT_MAX = 24
MAX_ENTITIES = 25
MAX_STATEMENTS = 25
MAX_ABOUT = 4
MAX_SOURCES = 12
MAX_DECISIONS = 50


def _cut(limit: int) -> BeforeValidator:
    def cut(value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # a Measure's value given as a number
        if isinstance(value, str):
            value = " ".join(value.split())
            return value[:limit]
        if isinstance(value, list):
            return value[:limit]
        return value

    return BeforeValidator(cut)


# A string cut to its bound, then checked against it (the bound is also the schema's maxLength).
# Spelled out per bound: a type checker takes ``Annotated[...]`` as a type, not a function's result.
Name: TypeAlias = Annotated[str, _cut(NAME_MAX), Field(max_length=NAME_MAX)]
Description: TypeAlias = Annotated[str, _cut(DESCRIPTION_MAX), Field(max_length=DESCRIPTION_MAX)]
Date: TypeAlias = Annotated[str, _cut(DATE_MAX), Field(max_length=DATE_MAX)]
Sentence: TypeAlias = Annotated[str, _cut(STATEMENT_MAX), Field(max_length=STATEMENT_MAX)]
Value: TypeAlias = Annotated[str, _cut(VALUE_MAX), Field(max_length=VALUE_MAX)]
Unit: TypeAlias = Annotated[str, _cut(UNIT_MAX), Field(max_length=UNIT_MAX)]
EntityType = Literal["Person", "Place", "Organization", "Tool", "Topic", "Event"]
StatementType = Literal["Fact", "Instruction", "Preference", "Measure"]
assert set(EntityType.__args__) == set(ENTITY_TYPES)  # type: ignore[attr-defined]
assert set(StatementType.__args__) == set(STATEMENT_TYPES)  # type: ignore[attr-defined]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ExtractedEntity(_Reply):
    type: EntityType
    name: Name
    description: Description = Field(
        default="", description="One short phrase saying who or what it is in this chat")
    date: Date | None = Field(
        default=None, description="Event only: the date the chat states for it, as written")


class ExtractedStatement(_Reply):
    type: StatementType
    text: Sentence = Field(
        description="One self-contained sentence")
    about: Annotated[list[Name], _cut(MAX_ABOUT), Field(max_length=MAX_ABOUT)] = Field(
        default_factory=list, description="Names of the entities it is about")
    value: Value | None = Field(default=None, description="Measure only")
    unit: Unit | None = Field(default=None, description="Measure only")
    topic: Name | None = Field(
        default=None, description="Instruction/Preference only: the Topic that triggers the rule")
    message_ids: Annotated[list[int], _cut(MAX_SOURCES), Field(max_length=MAX_SOURCES)] = Field(
        default_factory=list, description="Ids of the messages it comes from")


class Extraction(_Reply):
    entities: Annotated[list[ExtractedEntity], _cut(MAX_ENTITIES), Field(max_length=MAX_ENTITIES)] = Field(
        default_factory=list)
    statements: Annotated[list[ExtractedStatement], _cut(MAX_STATEMENTS), Field(max_length=MAX_STATEMENTS)] = Field(
        default_factory=list)


class SameEntityDecision(_Reply):
    pair: int = Field(ge=0, le=1000, description="The pair's number as given")
    same: bool


class ResolutionReply(_Reply):
    decisions: Annotated[list[SameEntityDecision], _cut(MAX_DECISIONS), Field(max_length=MAX_DECISIONS)]


UpdateRelation = Literal["replaces", "contradicts", "unrelated"]


class UpdateDecision(_Reply):
    pair: int = Field(ge=0, le=1000, description="The pair's number as given")
    relation: UpdateRelation


class UpdateReply(_Reply):
    decisions: Annotated[list[UpdateDecision], _cut(MAX_DECISIONS), Field(max_length=MAX_DECISIONS)]

"""What the memory system asks of the model client, as protocols.

Ingest and the agent are written against these, not against ``pytest_beam.llm.ModelClient``
itself, so what each part needs is written down and a test's stand-in needs only those calls.
The harness's ModelClient fits all three; ``scoring.judge.JudgeModel`` is the judge's like seam.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..llm import ChatResult, Role, StructuredResult
    from ..llm.wire import NamedToolChoice, ToolSpec, WireMessage

__all__ = ["StructuredModels", "AgentModels", "EmbeddingModels"]


class StructuredModels(Protocol):
    """Ingest's need: one JSON reply valid for a schema (extraction, resolution, updates)."""

    def structured(self, *, role: Role, messages: list[WireMessage], schema: type[BaseModel],
                   max_tokens: int | None = None) -> StructuredResult: ...


class AgentModels(StructuredModels, Protocol):
    """The agent's need besides its JSON actions: chat, with tools when the endpoint takes them."""

    def chat(self, *, role: Role, messages: list[WireMessage], tools: list[ToolSpec] | None = None,
             tool_choice: str | NamedToolChoice | None = None, max_tokens: int | None = None) -> ChatResult: ...


class EmbeddingModels(Protocol):
    """An endpoint embedder's need: vectors from the endpoint's ``/v1/embeddings``."""

    def embed(self, texts: list[str], *, model: str) -> list[list[float]]: ...

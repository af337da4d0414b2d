"""Pydantic records of the BEAM data as the harness sees it.

Only `Conversation` (the chat) and `SystemQuestion` ever reach a memory system; the rubric goes to
the judge; reference answers live in `ReferenceAnswers`, apart from every question record.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ABILITIES: tuple[str, ...] = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)

Role = Literal["user", "assistant"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Message(_Frozen):
    id: int = Field(ge=0, description="BEAM's message id, counted from 0 across the conversation")
    role: Role
    text: str


class Session(_Frozen):
    number: int = Field(ge=1)
    date: dt.date | None = Field(description="The first message's time anchor: the chat's only clock")
    messages: tuple[Message, ...]


class Conversation(_Frozen):
    id: str = Field(description="BEAM's conversation id, e.g. '17'")
    sessions: tuple[Session, ...]

    def messages(self) -> list[Message]:
        return [m for s in self.sessions for m in s.messages]

    def session_of(self, message_id: int) -> Session:
        for session in self.sessions:
            if any(m.id == message_id for m in session.messages):
                return session
        raise KeyError(f"conversation {self.id} has no message {message_id}")


class Document(_Frozen):
    """One unit of ingest: a whole session (full mode) or a slice of one (lite mode)."""

    conversation_id: str
    name: str = Field(description="'session-3' or 'slice-156-157'")
    session_number: int
    session_date: dt.date | None
    messages: tuple[Message, ...]

    def text(self) -> str:
        """The document as one text, every message tagged with its id, role and session."""
        when = self.session_date.isoformat() if self.session_date else "undated"
        head = f"[session {self.session_number}, {when}]"
        body = "\n".join(f"[message {m.id}, {m.role}] {m.text}" for m in self.messages)
        return f"{head}\n{body}"


class ProbingQuestion(_Frozen):
    conversation_id: str
    tier: str = Field(default="100K", description="BEAM's tier: 100K, 500K, 1M or 10M")
    ability: str
    index: int = Field(ge=0)
    question: str
    rubric: tuple[str, ...]
    source_message_ids: tuple[int, ...] = Field(
        description="Message ids holding the answer, flattened; empty for abstention"
    )
    known_bad_rubric: str | None = Field(default=None, description="Why the rubric is wrong, if it is")

    @property
    def id(self) -> str:
        """``conv17:information_extraction:0``; on the larger tiers ``500K/conv3:...`` (``data/ids.py``)."""
        from .ids import QuestionId

        return str(QuestionId(self.conversation_id, self.ability, self.index, self.tier))

    @property
    def conversation_label(self) -> str:
        """``conv17``, or ``500K/conv3`` on a larger tier: the conversation across tiers."""
        from .ids import conversation_label

        return conversation_label(self.tier, self.conversation_id)

    @property
    def system_id(self) -> str:
        """The id a memory system sees: from the conversation and the question's text alone.

        ``id`` names the ability (``conv17:event_ordering:0``), which the system under test must
        not learn; this hash tells it nothing the question's own text does not.
        """
        digest = hashlib.sha256(f"{self.conversation_id}\n{self.question}".encode()).hexdigest()
        return f"{self.conversation_label}:q-{digest[:12]}"

    def for_system(self) -> SystemQuestion:
        return SystemQuestion(id=self.system_id, conversation_id=self.conversation_id, question=self.question)


class SystemQuestion(_Frozen):
    """All a memory system learns of a question."""

    id: str
    conversation_id: str
    question: str


class ReferenceAnswer(_Frozen):
    question_id: str
    key: str = Field(description="The upstream key it came from: answer, ideal_answer, ...")
    text: str

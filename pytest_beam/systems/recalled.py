"""Shared by the outside memory systems (mem0, Graphiti): answer from what the system recalled.

Such a system stores memories (facts, edges) it derived from the chat, not the messages
themselves; what it recalls for a question goes in one prompt to the run's answering model (the
`agent` role, as for every system), with the session and date each memory came from and the BEAM
message ids behind it. Those ids are the answer's `retrieved_message_ids` (evidence recall).
The instructions follow the baselines' (answering.py) so a score gap between a baseline and an
outside system comes from what each put in front of the reader.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..data.records import Document, SystemQuestion
from ..memory.tokens import count_tokens
from ..system import FLAG_AGENT_FAILURE, ModelStep, SystemAnswer, SystemContext, TraceNote
from .answering import ANSWER_MAX_TOKENS, ANSWER_ROLE, SEPARATOR

if TYPE_CHECKING:
    from ..llm import ModelClient
    from ..llm.relay import ModelRelay
    from ..llm.wire import WireMessage

def harness_relay(context: SystemContext) -> ModelRelay:
    """The harness's model relay, which an outside system's library calls its models through."""
    if context.relay is None:
        raise RuntimeError(f"{context.system_name}: the harness lent no model relay (SystemContext.relay)")
    return context.relay()


def relay_endpoint(context: SystemContext, system_name: str, role: str, max_tokens: int) -> tuple[ModelRelay, str]:
    """The relay, and the base URL a library's calls go to as `role` under `system_name`, each call's
    completion capped at `max_tokens` (the libraries ask for up to their model's whole context)."""
    relay = harness_relay(context)
    relay.cap_completion(system_name, max_tokens)
    return relay, relay.base_url(system_name, role)


INSTRUCTIONS = """\
You are answering a question about an earlier conversation between a user and an AI assistant.
Below are memories that a memory system recalled from that conversation; they are all you know of
it. Each one starts with a header giving the session it came from and that session's date.

How to answer:
- Use only these memories. Do not guess facts they do not state.
- When memories disagree, the later one (later session date) is the current truth, unless the
  question asks about the history or about the disagreement itself.
- For questions about time or order, work from the session dates shown.
- If the memories do not contain what the question asks, say plainly that the conversation does
  not give you that information, and do not invent an answer.
- Answer directly and concisely.

Memories recalled:"""

NO_MEMORIES = "(none: the memory system recalled nothing for this question)"


@dataclass(frozen=True)
class Recalled:
    """One memory a system recalled, with the chat messages it came from."""

    text: str
    message_ids: tuple[int, ...]
    session: int | None = None
    date: dt.date | None = None
    score: float | None = None
    ref: str = ""  # the system's own id of the memory (mem0 id, Graphiti edge uuid)


@dataclass(frozen=True)
class Turn:
    """One BEAM message in chat order, with its session and the session's date (the only clock)."""

    id: int
    role: str
    text: str
    session: int
    date: dt.date | None


def turns(documents: Sequence[Document]) -> list[Turn]:
    """Every message once, sessions in order, messages in id order within them."""
    seen: dict[int, Turn] = {}
    for doc in sorted(documents, key=lambda d: d.session_number):
        for m in doc.messages:
            seen.setdefault(m.id, Turn(m.id, m.role, m.text, doc.session_number, doc.session_date))
    return sorted(seen.values(), key=lambda t: (t.session, t.id))


def windows(chat: list[Turn]) -> list[list[Turn]]:
    """A user message with the assistant's reply that follows it in the same session; others alone."""
    out: list[list[Turn]] = []
    for turn in chat:
        last = out[-1] if out else None
        if (last is not None and len(last) == 1 and last[0].role == "user" and turn.role == "assistant"
                and last[0].session == turn.session):
            last.append(turn)
        else:
            out.append([turn])
    return out


def render(memory: Recalled) -> str:
    where = f"session {memory.session}" if memory.session is not None else "session unknown"
    when = memory.date.isoformat() if memory.date else "undated"
    return f"### memory | {where} | {when}\n{memory.text}"


def build_prompt(memories: Sequence[Recalled], question: str) -> list[WireMessage]:
    body = SEPARATOR.join(render(m) for m in memories) if memories else NO_MEMORIES
    return [{"role": "system", "content": INSTRUCTIONS + SEPARATOR + body},
            {"role": "user", "content": f"Question: {question}"}]


def answer_from_recalled(models: ModelClient, question: SystemQuestion, memories: Sequence[Recalled], *,
                         system: str, details: TraceNote | None = None) -> SystemAnswer:
    """One answering call over the recalled memories; the trace notes what was recalled and from where."""
    prompt = build_prompt(memories, question.question)
    context_tokens = sum(count_tokens(p.get("content") or "") for p in prompt)
    ids = sorted({i for m in memories for i in m.message_ids})
    note: TraceNote = {
        "type": "note", "event": "recalled", "system": system, "message_ids": ids, "context_tokens": context_tokens,
        "memories": [{"ref": m.ref, "text": m.text, "message_ids": list(m.message_ids), "session": m.session,
                      "score": None if m.score is None else round(m.score, 4)} for m in memories],
        **(details or {}),
    }
    reply = models.chat(role=ANSWER_ROLE, messages=prompt, max_tokens=ANSWER_MAX_TOKENS)
    text = (reply.text or "").strip()
    step: ModelStep = {"type": "model", "step": 1, "mode": "plain", "text": text, "tool_calls": [],
                            "finish_reason": reply.finish_reason, "final": True}
    step["usage"] = reply.usage.model_dump()
    return SystemAnswer(text=text, retrieved_message_ids=set(ids), trace=[note, step], steps=1,
                        flags=[] if text else [FLAG_AGENT_FAILURE], context_tokens=context_tokens)

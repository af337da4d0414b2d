"""Shared by every baseline: put chosen chat messages in one prompt, ask the model, report it.

Baselines differ only in which messages they pick. Keeping the prompt, the rendering of a
message and the token budget in one place means a score gap between two baselines comes from
their choice of messages, never from different wording around them.

The budget bounds the whole prompt as counted locally (memory/tokens.py): instructions, the
rendered messages and the question. Candidates come in priority order; they are taken while
they fit and taking stops at the first that does not, so "newest first" keeps a contiguous
newest stretch and "best first" keeps a prefix of the ranking. What fits is shown in chat
order (by message id), which keeps the chat's own sequence readable for the model.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ..data.records import Document, SystemQuestion
from ..memory.tokens import count_tokens
from ..system import FLAG_AGENT_FAILURE, ModelStep, SystemAnswer, SystemContext, TraceNote

if TYPE_CHECKING:
    from ..llm import ModelClient
    from ..llm.wire import WireMessage

ANSWER_ROLE: Final = "agent"  # metered and capped as the answering phase, like the built-in agent
ANSWER_MAX_TOKENS = 1024
DEFAULT_CONTEXT_TOKENS = 120_000
DEFAULT_TOP_K = 10
SEPARATOR = "\n\n"

INSTRUCTIONS = """\
You are answering a question about an earlier conversation between a user and an AI assistant.
Below are messages taken from that conversation; they are all you know of it. Each one starts
with a header giving its message id, its session number, the session's date and who wrote it.

How to answer:
- Use only these messages. Do not guess facts they do not state.
- When messages disagree, the later one (higher session, then higher id) is the current truth,
  unless the question asks about the history or about the disagreement itself.
- For questions about time or order, work from the session dates and message order shown.
- If the user stated instructions or preferences for how answers should be given, follow them.
- If the messages do not contain what the question asks, say plainly that the conversation does
  not give you that information, and do not invent an answer.
- Answer directly and concisely.

Messages from the conversation:"""

NO_MESSAGES = "(none: no message of the conversation was selected for this question)"


@dataclass(frozen=True)
class ChatMessage:
    """One message of the chat with the session it belongs to: what a baseline chooses among."""

    id: int
    role: str
    text: str
    session: int
    date: dt.date | None


def chat_messages(documents: Iterable[Document]) -> list[ChatMessage]:
    """Every message of the ingested documents once, in chat order (by id)."""
    seen: dict[int, ChatMessage] = {}
    for doc in documents:
        for m in doc.messages:
            seen.setdefault(m.id, ChatMessage(m.id, m.role, m.text, doc.session_number, doc.session_date))
    return [seen[i] for i in sorted(seen)]


def render_message(message: ChatMessage) -> str:
    when = message.date.isoformat() if message.date else "undated"
    return f"### message {message.id} | session {message.session} | {when} | {message.role}\n{message.text}"


def build_prompt(messages: Sequence[ChatMessage], question: str) -> list[WireMessage]:
    """The request's messages: instructions and chat excerpts as system, the question as user."""
    body = SEPARATOR.join(render_message(m) for m in messages) if messages else NO_MESSAGES
    return [{"role": "system", "content": INSTRUCTIONS + SEPARATOR + body},
            {"role": "user", "content": question}]


def prompt_tokens(prompt: Sequence[WireMessage]) -> int:
    """Local count of what the prompt sends (message contents; the endpoint's framing aside)."""
    return sum(count_tokens(p.get("content") or "") for p in prompt)


@dataclass(frozen=True)
class Fitted:
    messages: list[ChatMessage]  # chat order
    context_tokens: int  # the whole prompt, counted exactly once assembled
    message_tokens: int  # the rendered messages alone
    dropped: list[int]  # candidate ids left out for the budget, in priority order


def fit_to_budget(candidates: Sequence[ChatMessage], question: str, budget: int) -> Fitted:
    """The longest priority-order prefix of `candidates` whose prompt is at most `budget` tokens.

    Summing per-message counts can be off by a few tokens at the joins, so the assembled prompt
    is counted exactly and the last-taken message dropped until it fits. A budget too small for
    the instructions and the question alone sends those with no message (and says so in counts).
    """
    base = prompt_tokens(build_prompt([], question)) - count_tokens(NO_MESSAGES)
    sep = count_tokens(SEPARATOR)
    taken: list[ChatMessage] = []
    total = base
    for m in candidates:
        cost = count_tokens(render_message(m)) + sep
        if total + cost > budget:
            break
        taken.append(m)
        total += cost
    while True:
        shown = sorted(taken, key=lambda m: m.id)
        exact = prompt_tokens(build_prompt(shown, question))
        if exact <= budget or not taken:
            break
        taken.pop()
    kept = {m.id for m in taken}
    body = SEPARATOR.join(render_message(m) for m in shown)
    return Fitted(messages=shown, context_tokens=exact, message_tokens=count_tokens(body) if shown else 0,
                  dropped=[m.id for m in candidates if m.id not in kept])


def answer_from_messages(models: ModelClient, question: SystemQuestion, candidates: Sequence[ChatMessage], *,
                         system: str, budget: int, flags: Sequence[str] = (),
                         details: TraceNote | None = None) -> SystemAnswer:
    """Fit the candidates to the budget, ask the answering model once, and say what was sent.

    `retrieved_message_ids` is exactly the messages in the prompt; the trace's first step notes
    them with the token counts, `details` (a system's own facts: scores, k, ...) added to it.
    """
    fitted = fit_to_budget(candidates, question.question, budget)
    note: TraceNote = {
        "type": "note", "event": "context", "system": system,
        "message_ids": [m.id for m in fitted.messages], "context_tokens": fitted.context_tokens,
        "message_tokens": fitted.message_tokens, "budget": budget, "candidates": len(candidates),
        "dropped_for_budget": len(fitted.dropped), **(details or {}),
    }
    reply = models.chat(role=ANSWER_ROLE, messages=build_prompt(fitted.messages, question.question),
                        max_tokens=ANSWER_MAX_TOKENS)
    text = (reply.text or "").strip()
    step: ModelStep = {"type": "model", "step": 1, "mode": "plain", "text": text, "tool_calls": [],
                            "finish_reason": reply.finish_reason, "final": True}
    step["usage"] = reply.usage.model_dump()
    answer_flags = list(flags) + ([] if text else [FLAG_AGENT_FAILURE])  # an empty answer is none
    return SystemAnswer(text=text, retrieved_message_ids={m.id for m in fitted.messages}, trace=[note, step],
                        steps=1, flags=answer_flags, context_tokens=fitted.context_tokens)


def setting(context: SystemContext, name: str, default: int) -> int:
    """An integer setting of the run, or the default while the harness has no option for it."""
    value = getattr(getattr(context, "settings", None), name, None)
    if value is None:
        return default
    value = int(value)
    if value < 1:
        raise ValueError(f"setting {name} must be at least 1, got {value}")
    return value

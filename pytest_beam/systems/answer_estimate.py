"""The baselines' dry-run estimate: no ingest call, and one answering call per question.

Each baseline says how many context tokens it would put before the reader for a question
(`ContextCounter`, made once per conversation from its chat messages); this module counts the
calls. Where that needs no model the count is exact: `long-context` (the newest messages that
fit the budget), `gold-evidence` (the question's source messages) and `bm25` (its real
ranking); `dense` needs the embedder to rank, so it assumes k messages of the conversation's
mean message length, and says so in its line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..memory.tokens import count_tokens
from ..system import ANSWER_TOKENS, Estimate, PhaseEstimate
from .answering import SEPARATOR, ChatMessage, chat_messages, render_message

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..settings import Settings

# One conversation's messages and the run's settings -> the context tokens sent for a question.
ContextCounter = Callable[["ProbingQuestion"], int]
CounterFactory = Callable[[list[ChatMessage], "Settings"], ContextCounter]


def estimate_answers(name: str, bench_set: BenchmarkSet, questions: list[ProbingQuestion], settings: Settings,
                     counter: CounterFactory, note: str = "", measurement_aid: bool = False) -> Estimate:
    """One answering call per question with the context tokens `counter` says it would send."""
    estimate = Estimate(phases={"agent": PhaseEstimate()})
    by_conv: dict[str, list[ProbingQuestion]] = {}
    for q in questions:
        by_conv.setdefault(q.conversation_id, []).append(q)
    for cid, qs in sorted(by_conv.items(), key=lambda kv: int(kv[0])):
        estimate.chunks[cid] = 0  # no ingest call
        context = counter(chat_messages(bench_set.documents[cid]), settings)
        for q in qs:
            estimate.questions += 1
            estimate.phases["agent"].add(1, context(q), ANSWER_TOKENS)
    mean = estimate.phases["agent"].prompt_tokens / max(estimate.questions, 1)
    estimate.summary = (f"{name}: {estimate.questions} questions, no ingest call, one answering call per question, "
                        f"context ~{mean:,.0f} tokens per question (budget {settings.context_tokens:,}){note}"
                        + (" [measurement aid]" if measurement_aid else ""))
    return estimate


def newest_first_costs(messages: list[ChatMessage]) -> list[int]:
    """Each message's tokens in the prompt (with its separator), newest first: counted once per conversation."""
    separator = count_tokens(SEPARATOR)
    return [count_tokens(render_message(m)) + separator for m in reversed(messages)]

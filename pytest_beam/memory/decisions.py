"""Pairs the model decides in batches: the loop entity resolution and updates over time share.

Both put candidate pairs to the model (role "resolution") at most ``max_llm_pairs`` per label,
``batch_pairs`` per call, read one verdict per pair and count calls and invalid replies the same
way; only the prompt, the reply schema and what a verdict means differ.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from neo4j import Driver
    from pydantic import BaseModel

    from ..llm.wire import WireMessage
    from .model_protocols import StructuredModels

T = TypeVar("T")
V = TypeVar("V")


@dataclass(frozen=True)
class DecisionBudget:
    """How many pairs the model may see (per label), how many per call, and its reply's cap."""

    max_llm_pairs: int = 500
    batch_pairs: int = 20
    max_tokens: int = 1024


@dataclass
class DecisionStats:
    """What deciding cost: the counters both deciders report."""

    candidate_pairs: int = 0
    model_pairs: int = 0
    pairs_over_cap: int = 0
    model_calls: int = 0
    invalid_replies: int = 0

    def add(self, other: DecisionStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class GraphDecider:
    """What a decider over one conversation's graph holds: the graph, the model, the pool its
    calls run on, its budget, and the notes it leaves in the ingest report."""

    driver: Driver
    database: str
    models: StructuredModels
    executor: Executor
    budget: DecisionBudget = DecisionBudget()
    notes: list[str] = field(default_factory=list)


class Replies(Generic[T]):
    """The model's replies to batches already submitted, read in order with :meth:`verdicts`."""

    def __init__(self, batches: list[Sequence[T]], futures: list[Any]) -> None:
        self._pending = zip(batches, futures)

    def verdicts(self, stats: DecisionStats, on_call: Callable[[], None] | None,
                 answers_of: Callable[[Any], dict[int, V]], default: V) -> Iterator[tuple[T, V]]:
        """(pair, verdict) for every pair of every valid reply; a pair the reply skipped gets
        ``default``. Each reply counts one call; a reply invalid after the model layer's retry
        counts as invalid and its pairs get no verdict."""
        for batch, future in self._pending:
            reply = future.result()
            stats.model_calls += 1
            if on_call:
                on_call()
            if reply is None:
                stats.invalid_replies += 1
                continue
            answers = answers_of(reply)
            for number, item in enumerate(batch):
                yield item, answers.get(number, default)


def ask_in_batches(models: StructuredModels, executor: Executor, items: Sequence[T], budget: DecisionBudget,
                   messages_for: Callable[[Sequence[T]], list[WireMessage]], schema: type[BaseModel]) -> Replies[T]:
    """Submit every batch now (so several kinds of questions are in flight together) and return
    their replies; a reply that stayed invalid is None. Other model errors propagate."""
    from ..llm.errors import StructuredOutputError

    size = budget.batch_pairs
    batches = [items[i:i + size] for i in range(0, len(items), size)]

    def call(batch: Sequence[T]) -> Any | None:
        try:
            return models.structured(role="resolution", messages=messages_for(batch), schema=schema,
                                     max_tokens=budget.max_tokens).value
        except StructuredOutputError:
            return None

    return Replies(batches, [executor.submit(call, batch) for batch in batches])


def cap_per_label(pairs: Iterable[T], label_of: Callable[[T], str], budget: DecisionBudget,
                  stats: DecisionStats) -> list[T]:
    """The first ``max_llm_pairs`` pairs of each label (in the given order); the rest are counted."""
    kept: list[T] = []
    per_label: dict[str, int] = {}
    for pair in pairs:
        label = label_of(pair)
        if per_label.get(label, 0) >= budget.max_llm_pairs:
            stats.pairs_over_cap += 1
            continue
        per_label[label] = per_label.get(label, 0) + 1
        kept.append(pair)
    return kept

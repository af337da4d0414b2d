"""Batched yes/no-style decisions by the model (entity merges, statement updates)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def ask_in_batches(models: Any, executor: Any, items: Sequence[T], batch_size: int,
                   messages_for: Callable[[Sequence[T]], list[dict[str, str]]], schema: type,
                   max_tokens: int) -> Iterator[tuple[Sequence[T], Any | None]]:
    """(batch, reply) in order; reply is None when it stayed invalid after the model layer's one
    retry (the caller counts it and moves on). Other model errors propagate.

    Every batch is submitted before this returns (it is not a generator), so a caller can put
    several kinds of questions in flight together and read the replies afterwards."""
    from ..llm.errors import StructuredOutputError

    batches = [items[i:i + batch_size] for i in range(0, len(items), batch_size)]

    def call(batch: Sequence[T]) -> Any | None:
        try:
            return models.structured(role="resolution", messages=messages_for(batch), schema=schema,
                                     max_tokens=max_tokens).value
        except StructuredOutputError:
            return None

    futures = [executor.submit(call, batch) for batch in batches]
    return ((batch, future.result()) for batch, future in zip(batches, futures))

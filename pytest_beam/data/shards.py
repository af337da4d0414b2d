"""One run spread over machines: the K-th of N shards of a set's conversations.

A shard is whole conversations (a conversation is ingested once, on one machine), and the shards
are balanced by size: conversations go, largest first, each to the shard holding the least so
far (ties to the lower shard), so the slowest machine finishes near the others. The assignment
depends only on the sizes and the set's order, so every machine computes the same one, and every
conversation lands in exactly one shard. `pytest-beam merge` joins the shards' records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as written: --beam-shard=1/3 is the first of three
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(spec: str) -> Shard:
    """``K/N`` with 1 <= K <= N; anything else is one ValueError that says what to write."""
    match = _SPEC.match(spec)
    if match is None:
        raise ValueError("must be K/N, the K-th of N shards (e.g. 2/3)")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ValueError("K must be between 1 and N in K/N, the K-th of N shards (e.g. 2/3)")
    return Shard(index, count)


def assign(sizes: Mapping[str, int], order: Sequence[str], count: int) -> list[tuple[str, ...]]:
    """Each shard's conversations (in the set's ``order``), the largest placed first on the lightest shard.

    ``sizes``: each conversation's size (its chunks at the run's chunk size); a shard may be empty
    when there are fewer conversations than shards."""
    if count < 1:
        raise ValueError("a run splits into 1 shard or more")
    missing = [c for c in order if c not in sizes]
    if missing:
        raise ValueError(f"no size for conversation(s) {', '.join(missing)}")
    position = {c: n for n, c in enumerate(order)}
    loads = [0] * count
    members: list[list[str]] = [[] for _ in range(count)]
    for conversation in sorted(order, key=lambda c: (-sizes[c], position[c])):
        lightest = min(range(count), key=lambda s: (loads[s], s))
        loads[lightest] += sizes[conversation]
        members[lightest].append(conversation)
    return [tuple(sorted(m, key=position.__getitem__)) for m in members]

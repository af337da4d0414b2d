"""A run's shards: whole conversations, balanced by size, every one in exactly one shard, the same
split on every machine; K/N read strictly."""

from __future__ import annotations

import itertools

import pytest

from pytest_beam.data.shards import Shard, assign, parse_shard


def test_the_full_set_in_three_is_balanced_and_each_conversation_is_in_one_shard():
    sizes = {"1": 141, "4": 114, "6": 147, "13": 146, "17": 155}  # the full set's chunks at 1,000 tokens
    order = ["1", "4", "6", "13", "17"]
    shards = assign(sizes, order, 3)
    assert shards == [("17",), ("4", "6"), ("1", "13")]  # largest first, each to the lightest shard
    assert sorted(itertools.chain(*shards)) == sorted(order)
    loads = [sum(sizes[c] for c in s) for s in shards]
    assert max(loads) - min(loads) <= max(sizes.values())
    assert assign(dict(reversed(list(sizes.items()))), order, 3) == shards  # the same split from any dict order


@pytest.mark.parametrize("count", [1, 2, 4, 7])
def test_any_count_places_every_conversation_once(count):
    sizes = {str(n): (n * 37) % 101 + 5 for n in range(1, 21)}
    shards = assign(sizes, list(sizes), count)
    assert len(shards) == count and sorted(itertools.chain(*shards), key=int) == list(sizes)


def test_more_shards_than_conversations_leaves_some_empty():
    assert assign({"1": 3, "2": 5}, ["1", "2"], 3) == [("2",), ("1",), ()]


@pytest.mark.parametrize(("spec", "shard"), [("1/3", Shard(1, 3)), (" 3 / 3 ", Shard(3, 3)), ("1/1", Shard(1, 1))])
def test_a_shard_is_k_of_n(spec, shard):
    assert parse_shard(spec) == shard and str(shard) == f"{shard.index}/{shard.count}"


@pytest.mark.parametrize(("spec", "why"), [("0/3", "K must be between 1 and N"), ("4/3", "K must be between 1 and N"),
                                           ("1/0", "K must be between 1 and N"), ("2", "must be K/N"),
                                           ("a/b", "must be K/N"), ("1/2/3", "must be K/N")])
def test_anything_else_is_refused_saying_what_to_write(spec, why):
    with pytest.raises(ValueError, match=why):
        parse_shard(spec)


def test_a_conversation_without_a_size_is_named():
    with pytest.raises(ValueError, match="no size for conversation"):
        assign({"1": 3}, ["1", "9"], 2)

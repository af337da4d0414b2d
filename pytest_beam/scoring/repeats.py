"""Judge repeats (``--beam-judge-runs N``): one rubric item judged N times, each its own call.

A judge at temperature 0 is still not deterministic on every endpoint; repeating each item shows
how much of a score is the judge's own noise. The item scores the mean of its repeats and keeps
each repeat's score, so the record can say how often all repeats agreed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .scores import EventOrderingDetail, ItemScore

__all__ = ["agreement_units", "judge_repeatedly"]


def judge_repeatedly(score_once: Callable[[int], tuple[ItemScore, set[str], int]],
                     runs: int) -> tuple[ItemScore, set[str], int]:
    """``score_once(repeat)`` for repeat 0 .. runs-1; the item scores their mean.

    The first repeat's reason and reply are kept; ``parsed`` is True only if every repeat parsed;
    the flags are the union of every repeat's. One run returns ``score_once(0)`` unchanged.
    """
    if runs < 1:
        raise ValueError(f"judge runs {runs} must be at least 1")
    if runs == 1:
        return score_once(0)
    done = [score_once(r) for r in range(runs)]
    scores = [item.score for item, _, _ in done]
    first = done[0][0]
    item = first.model_copy(update={"score": sum(scores) / runs, "repeats": scores,
                                    "parsed": all(i.parsed for i, _, _ in done)})
    flags: set[str] = set().union(*(f for _, f, _ in done))
    return item, flags, sum(c for _, _, c in done)


def agreement_units(items: Iterable[ItemScore], event_detail: EventOrderingDetail | None = None) -> tuple[int, int]:
    """(agreed, repeated) judge decisions of one question, for the agreement between repeats.

    A rubric item judged more than once agrees when every repeat gave it the same score; an
    event-ordering answer line (its alignment asked more than once) agrees when every repeat
    matched it to the same rubric event.
    """
    repeated = [item.repeats for item in items if len(item.repeats) > 1]
    agreed = sum(len(set(r)) == 1 for r in repeated)
    count = len(repeated)
    runs = event_detail.repeat_alignments if event_detail is not None else []
    if len(runs) > 1:
        lines = list(zip(*runs))
        count += len(lines)
        agreed += sum(len(set(line)) == 1 for line in lines)
    return agreed, count

"""How many requests this process keeps in flight to one endpoint: it follows what the endpoint takes.

A fixed limit either leaves a generous endpoint idle or floods a strict one with requests it
answers 429; the endpoint's own answers say which. The limit starts at the ceiling
(``--beam-concurrency``, never exceeded), is halved when a request is throttled (429, 503) or
times out, and grows by one after as many successes in a row as the limit allows at once (one
more request per round trip, additive increase, multiplicative decrease). A burst of throttled
replies to requests sent at one limit halves it once: only a request sent since the last decrease
decreases it again.

One limit per endpoint and ceiling in a process (xdist workers each keep their own: each adapts to
the share of the endpoint it gets). :func:`limits` reports them for the run's summary.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..redaction import url_without_credentials

Outcome = Literal["ok", "throttled", "timeout", "error"]


class LimitState(BaseModel):
    """What one endpoint's limit did in this process: a worker's part carries it to the controller."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    endpoint: str  # its base URL, credentials left out
    ceiling: int
    limit: int  # where it stands now: at the end of a run, where it settled
    lowest: int
    throttled: int  # replies 429 or 503
    timeouts: int
    decreases: int


class AdaptiveLimit:
    """Requests in flight to one endpoint, between 1 and ``ceiling``. Safe to share between threads."""

    def __init__(self, endpoint: str, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"the concurrency ceiling must be 1 or more, not {ceiling}")
        self.endpoint = endpoint
        self.ceiling = ceiling
        self._limit = ceiling
        self._lowest = ceiling
        self._in_flight = 0
        self._successes = 0
        self._epoch = 0  # bumped at every decrease: requests sent before it do not decrease again
        self._throttled = 0
        self._timeouts = 0
        self._decreases = 0
        self._changed = threading.Condition()

    @property
    def limit(self) -> int:
        return self._limit

    @contextmanager
    def slot(self) -> Iterator[Slot]:
        """Wait for room under the limit; the caller says how the request went with ``slot.outcome``
        (left at "error" if it raises: an error that says nothing of the endpoint's load)."""
        with self._changed:
            self._changed.wait_for(lambda: self._in_flight < self._limit)
            self._in_flight += 1
            slot = Slot(self._epoch)
        try:
            yield slot
        finally:
            self._release(slot)

    def _release(self, slot: Slot) -> None:
        with self._changed:
            self._in_flight -= 1
            if slot.outcome in ("throttled", "timeout"):
                if slot.outcome == "throttled":
                    self._throttled += 1
                else:
                    self._timeouts += 1
                self._successes = 0
                if slot.epoch == self._epoch:  # the first sign of overload at this limit
                    self._limit = max(1, self._limit // 2)
                    self._lowest = min(self._lowest, self._limit)
                    self._epoch += 1
                    self._decreases += 1
            elif slot.outcome == "ok" and self._limit < self.ceiling:
                self._successes += 1
                if self._successes >= self._limit:
                    self._limit += 1
                    self._successes = 0
            self._changed.notify_all()

    def state(self) -> LimitState:
        with self._changed:
            return LimitState(endpoint=url_without_credentials(self.endpoint), ceiling=self.ceiling,
                              limit=self._limit, lowest=self._lowest, throttled=self._throttled,
                              timeouts=self._timeouts, decreases=self._decreases)


class Slot:
    """One request's place under the limit: set ``outcome`` before the slot closes."""

    __slots__ = ("epoch", "outcome")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.outcome: Outcome = "error"


_LIMITS: dict[tuple[str, int], AdaptiveLimit] = {}
_LIMITS_LOCK = threading.Lock()


def endpoint_limit(endpoint: str, ceiling: int) -> AdaptiveLimit:
    """The process-wide limit of an endpoint under a ceiling.

    Clients of one endpoint with the same ceiling share it, so the limit holds across them; a client
    configured with another ceiling gets a limit of its own (keying by URL alone let the first
    client's size silently override every later one's)."""
    key = (endpoint.rstrip("/"), int(ceiling))
    with _LIMITS_LOCK:
        limit = _LIMITS.get(key)
        if limit is None:
            limit = _LIMITS[key] = AdaptiveLimit(key[0], key[1])
        return limit


def limits() -> list[LimitState]:
    """Every endpoint limit this process used, as it stands now."""
    with _LIMITS_LOCK:
        return [limit.state() for limit in _LIMITS.values()]

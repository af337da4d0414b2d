"""Usage counters and the thread-safe per-role :class:`Meter`.

Counting rules (what a summary can rely on):

* ``calls`` counts *logical* calls answered by the endpoint (network). A call that needed
  retries (429, 5xx, timeouts) or an endpoint fallback (seed dropped, JSON mode instead of JSON
  schema) is still one call; the extra HTTP requests are in ``retries``.
* ``prompt_tokens`` / ``completion_tokens`` come from the response's ``usage`` field. When a
  response has none they count 0 and ``usage_missing`` is incremented.
* Responses served from the on-disk cache count in ``cached_calls``, responses replayed from a
  cassette in ``replayed_calls``; neither adds to ``calls`` or the live token counts. Their
  tokens (as reported in the stored response) go to ``cached_tokens`` so a summary can show
  what was saved.
* A call that failed for good (:class:`ModelEndpointError`) counts in ``errors`` only.
* ``latency_s`` is wall time of the call including retries and backoff.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached_calls: int = 0
    replayed_calls: int = 0
    cached_tokens: int = 0
    usage_missing: int = 0
    retries: int = 0
    errors: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __radd__(self, other: Any) -> "Usage":
        if other == 0:  # lets sum() work without a start value
            return Usage(**asdict(self))
        return NotImplemented

    def __sub__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    def is_zero(self) -> bool:
        return all(not getattr(self, f.name) for f in fields(self))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Usage":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


Snapshot = dict[str, Usage]


def snapshot_to_dict(snapshot: Mapping[str, Usage]) -> dict[str, dict[str, Any]]:
    """Plain-JSON form of a snapshot (for xdist transport or a record)."""
    return {role: usage.to_dict() for role, usage in snapshot.items()}


def snapshot_from_dict(data: Mapping[str, Mapping[str, Any]]) -> Snapshot:
    return {role: Usage.from_dict(u) for role, u in data.items()}


class Meter:
    """Usage per role, safe to share between threads.

    ``snapshot()`` returns a copy ``{role: Usage}``; ``to_dict()`` / ``Meter.from_dict()`` give
    the plain-JSON form. Under xdist each worker sends ``meter.to_dict()`` to the controller,
    which calls ``meter.merge(data)``. Per question: ``before = meter.snapshot()`` ... then
    ``meter.since(before)``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_role: dict[str, Usage] = {}

    def record(self, role: str, usage: Usage) -> None:
        with self._lock:
            current = self._by_role.get(role)
            self._by_role[role] = usage + Usage() if current is None else current + usage

    def snapshot(self) -> Snapshot:
        with self._lock:
            return {role: u + Usage() for role, u in self._by_role.items()}

    def total(self) -> Usage:
        return sum(self.snapshot().values(), Usage())

    def merge(self, other: "Meter | Mapping[str, Any]") -> None:
        """Add another meter, snapshot, or plain-JSON snapshot into this one."""
        if isinstance(other, Meter):
            items = other.snapshot()
        else:
            items = {
                role: u if isinstance(u, Usage) else Usage.from_dict(u) for role, u in other.items()
            }
        for role, usage in items.items():
            self.record(role, usage)

    def since(self, snapshot: Mapping[str, Usage]) -> Snapshot:
        """Usage added since ``snapshot`` (roles with no change are left out)."""
        now = self.snapshot()
        diff: Snapshot = {}
        for role, usage in now.items():
            d = usage - snapshot.get(role, Usage())
            if not d.is_zero():
                diff[role] = d
        return diff

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return snapshot_to_dict(self.snapshot())

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, Any]]) -> "Meter":
        meter = cls()
        meter.merge(data)
        return meter

    def __repr__(self) -> str:
        return f"Meter({self.to_dict()!r})"

"""Usage counters and the thread-safe per-role :class:`Meter`.

Counting rules (what a summary can rely on): the meter equals what the endpoint was sent,
``calls + retries + abandoned`` HTTP requests, in every case.

* ``calls`` counts *logical* calls sent to the endpoint (network), answered or failed. A call
  that needed retries (429, 5xx, timeouts) or an endpoint fallback (seed dropped, JSON mode
  instead of JSON schema) is still one call; the extra HTTP requests are in ``retries``.
* A call that failed for good (:class:`ModelEndpointError`) is a call with its retries, and
  counts in ``errors`` too (one that never reached the network, e.g. no base URL: errors only).
* ``abandoned`` counts calls sent whose reply never came back because the process stopped while
  they were in flight (Ctrl-C, SIGTERM, kill -9): the endpoint saw them, their tokens are unknown.
  Only the run's journal (:class:`UsageJournal`, :func:`read_journals`) knows them.
* ``prompt_tokens`` / ``completion_tokens`` come from the response's ``usage`` field. When a
  response has none they count 0 and ``usage_missing`` is incremented.
* Responses served from the on-disk cache count in ``cached_calls``, responses replayed from a
  cassette in ``replayed_calls``; neither adds to ``calls`` or the live token counts. Their
  tokens (as reported in the stored response) go to ``cached_tokens`` so a summary can show
  what was saved.
* ``seconds`` is wall time of the call including retries and backoff.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class Usage(BaseModel):
    """Model calls and what they cost, for one role (or phase, or system): the one usage model, from
    the meter through the journal, a question's result and the workers' parts to the record's rows."""

    # A row written by a newer version (a record, a journal) may carry counts this one does not know.
    model_config = ConfigDict(extra="ignore")

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = Field(0.0, description="Wall (latency) seconds spent in these calls, retries and backoff "
                           "included", validation_alias=AliasChoices("seconds", "latency_s"))
    replayed_calls: int = Field(0, description="Calls answered from a cassette")
    cached_tokens: int = Field(0, description="Tokens of cached and replayed calls (recorded usage, not spent)")
    retries: int = 0
    errors: int = Field(0, description="Calls that failed for good (counted in calls when a request went out)")
    abandoned: int = Field(0, description="Calls sent whose reply never came: the run stopped while they were "
                           "in flight; the endpoint saw them, their tokens are unknown")
    usage_missing: int = Field(0, description="Live calls whose response reported no token usage (counted 0)")

    @property
    def requests(self) -> int:
        """HTTP requests the endpoint was sent for these calls."""
        return self.calls + self.retries + self.abandoned

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens paid for live."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def all_calls(self) -> int:
        """Calls whether live, cached or replayed: the one count of calls the record, the terminal, the
        page and JUnit all show (a replay makes no live call)."""
        return self.calls + self.cached_calls + self.replayed_calls

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})

    def __radd__(self, other: object) -> Usage:
        if other == 0:  # lets sum() work without a start value
            return self.model_copy()
        return NotImplemented

    def __sub__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(**{name: getattr(self, name) - getattr(other, name) for name in Usage.model_fields})

    def is_zero(self) -> bool:
        return all(not getattr(self, name) for name in Usage.model_fields)


#: Usage keyed by role (or phase): a meter's snapshot, a question's calls, an ingest's.
Snapshot = dict[str, Usage]


def add_usage(total: Snapshot, part: Mapping[str, Usage]) -> None:
    """Add usage into ``total``, role by role."""
    for role, usage in part.items():
        mine = total.get(role)
        total[role] = usage.model_copy() if mine is None else mine + usage


#: A Usage as the JSON logs hold it (``Usage.model_dump()``): a journal line, a trace step, a call event.
UsageJson = dict[str, int | float]


class SentEvent(TypedDict):
    """A journal line: request number ``sent`` of ``call`` is going out."""

    call: int
    role: str
    sent: int


class EndedEvent(TypedDict):
    """A journal line: ``call`` ended (``call`` None: usage merged in, not a call of this process)."""

    call: int | None
    role: str
    usage: UsageJson


class UsageScope:
    """The calls one piece of work made (a question), by role, while the meter counts every call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_role: dict[str, Usage] = {}

    def add(self, role: str, usage: Usage) -> None:
        with self._lock:
            current = self._by_role.get(role)
            self._by_role[role] = usage.model_copy() if current is None else current + usage

    def snapshot(self) -> Snapshot:
        with self._lock:
            return {role: u.model_copy() for role, u in self._by_role.items() if not u.is_zero()}


class Meter:
    """Usage per role, safe to share between threads.

    ``snapshot()`` returns a copy ``{role: Usage}``; ``since(before)`` what was added after a
    snapshot (every call of the process: an ingest's, whatever threads it used). What one question
    used, when several are answered at once, is its :meth:`scope`'s. Under xdist every process
    journals its calls (:class:`UsageJournal`) and the controller folds the journals
    (:func:`read_journals`).
    """

    def __init__(self, journal: UsageJournal | None = None) -> None:
        self._lock = threading.Lock()
        self._by_role: dict[str, Usage] = {}
        self.journal = journal
        self._ids = itertools.count(1)
        self._thread_scopes = threading.local()
        self._shared_scopes: list[UsageScope] = []

    @contextmanager
    def scope(self, thread_only: bool = False) -> Iterator[UsageScope]:
        """Counts the calls made while it is open: of this thread only (work that runs beside other
        work, each in a thread of its own), or of every thread that has no scope of its own (work
        that runs alone, whose calls an outside system's library may make from the relay's thread)."""
        scope = UsageScope()
        if thread_only:
            stack: list[UsageScope] = self._thread_scopes.__dict__.setdefault("stack", [])
            stack.append(scope)
        else:
            with self._lock:
                self._shared_scopes.append(scope)
        try:
            yield scope
        finally:
            if thread_only:
                stack.remove(scope)
            else:
                with self._lock:
                    self._shared_scopes.remove(scope)

    def new_call(self) -> int:
        """An id for one logical call (its journal lines carry it)."""
        return next(self._ids)

    def sent(self, role: str, call: int, attempt: int) -> None:
        """Request number ``attempt`` of ``call`` is going out now: journaled before it is sent,
        so a process that stops before the reply still leaves it counted (``abandoned``)."""
        if self.journal is not None:
            self.journal.write({"call": call, "role": role, "sent": attempt})

    def record(self, role: str, usage: Usage, call: int | None = None) -> None:
        with self._lock:
            current = self._by_role.get(role)
            self._by_role[role] = usage.model_copy() if current is None else current + usage
            scopes = self._thread_scopes.__dict__.get("stack") or list(self._shared_scopes)
        for scope in scopes:
            scope.add(role, usage)
        if self.journal is not None:
            self.journal.write({"call": call, "role": role, "usage": usage.model_dump()})

    def snapshot(self) -> Snapshot:
        with self._lock:
            return {role: u.model_copy() for role, u in self._by_role.items()}

    def total(self) -> Usage:
        return sum(self.snapshot().values(), Usage())

    def merge(self, other: Meter | Mapping[str, Usage]) -> None:
        """Add another meter or a snapshot into this one."""
        for role, usage in (other.snapshot() if isinstance(other, Meter) else other).items():
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

    def __repr__(self) -> str:
        return f"Meter({self.snapshot()!r})"


class UsageJournal:
    """One process's model calls as JSON lines, appended as each request goes out and as each
    call ends, so the run's usage survives the process (Ctrl-C, SIGTERM, kill -9 of an xdist
    worker): :func:`read_journals` folds every process's journal into the run's usage."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fh: Any = None

    def write(self, event: SentEvent | EndedEvent) -> None:
        line = json.dumps(event, separators=(",", ":")) + "\n"
        with self._lock:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open, appended to
            self._fh.write(line)
            self._fh.flush()  # in the kernel's hands: a killed process loses nothing written

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __repr__(self) -> str:
        return f"UsageJournal({str(self.path)!r})"


def read_journals(paths: Iterable[str | os.PathLike[str]]) -> Snapshot:
    """The usage per role of every call in these journals: each ended call as it was metered, and
    each call sent but never ended as ``abandoned`` (with the retries it had made). A last line
    cut short by a killed process is skipped."""
    total: dict[str, Usage] = {}
    for path in paths:
        ended: set[Any] = set()
        sent: dict[Any, tuple[str, int]] = {}
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(event, dict) or not isinstance(event.get("role"), str):
                    continue
                role, call = event["role"], event.get("call")
                if isinstance(event.get("usage"), dict):
                    total[role] = total.get(role, Usage()) + Usage.model_validate(event["usage"])
                    ended.add(call)
                elif isinstance(event.get("sent"), int):
                    sent[call] = (role, max(event["sent"], sent.get(call, (role, 0))[1]))
        for call, (role, attempts) in sent.items():
            if call not in ended:
                total[role] = total.get(role, Usage()) + Usage(abandoned=1, retries=attempts - 1)
    return total

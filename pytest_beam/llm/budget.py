"""Spend caps: refuse a real model call *before* it is sent once a cap would be exceeded.

Only real calls are checked (cache hits and cassette replays are free). Embedding calls are not
checked (the spend cap is about chat calls; embeddings are metered under "embedding").

A check is a reservation: :meth:`Budget.reserve` atomically checks the caps and counts the call,
so two threads (or two xdist workers sharing a :class:`FileBudget`) can never both take the last
call. After the call, :meth:`Budget.record` adds the tokens the endpoint reported.

Rules:

* calls: the call is refused when ``calls_used + 1 > max_calls``.
* tokens: the call is refused when ``tokens_used + estimated_prompt_tokens > max_tokens``
  (the client estimates prompt tokens as characters / 4 of the request's messages and tools),
  so a run stops at the cap rather than one large call beyond it; completion tokens cannot be
  known in advance, so the last allowed call can overshoot by its completion.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict

from ..files import atomic_write, file_lock
from .errors import BudgetExceeded

CALLS_FLAG = "--beam-max-calls"
TOKENS_FLAG = "--beam-max-tokens"


class BudgetState(TypedDict):
    """What the budget has counted (the shared file's JSON, for a FileBudget)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    refused: int


def _empty_state() -> BudgetState:
    return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "refused": 0}


class Budget:
    """In-memory budget (one process). ``None`` for a cap means unlimited."""

    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None) -> None:
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._state = _empty_state()

    # -- storage hooks (overridden by FileBudget) ------------------------------------------
    @contextmanager
    def _locked_state(self) -> Iterator[BudgetState]:
        with self._lock:
            yield self._state

    # -- API ---------------------------------------------------------------------------------
    def reserve(self, role: str | None = None, estimated_tokens: int = 0) -> None:
        """Count one call against the caps, or raise :class:`BudgetExceeded` (nothing counted)."""
        with self._locked_state() as state:
            calls = state["calls"]
            tokens = state["prompt_tokens"] + state["completion_tokens"]
            what = f"the next {role} call" if role else "the next call"
            if self.max_calls is not None and calls + 1 > self.max_calls:
                state["refused"] += 1
                raise BudgetExceeded(
                    f"Spend cap reached: {calls}/{self.max_calls} model calls used; refusing "
                    f"{what}. Raise the cap with {CALLS_FLAG}.",
                    cap="calls", used=calls, limit=self.max_calls, flag=CALLS_FLAG, role=role,
                )
            if self.max_tokens is not None and tokens + max(estimated_tokens, 0) > self.max_tokens:
                state["refused"] += 1
                est = f" (~{estimated_tokens} more estimated for its prompt)" if estimated_tokens else ""
                raise BudgetExceeded(
                    f"Spend cap reached: {tokens}/{self.max_tokens} tokens used{est}; refusing "
                    f"{what}. Raise the cap with {TOKENS_FLAG}.",
                    cap="tokens", used=tokens, limit=self.max_tokens, flag=TOKENS_FLAG, role=role,
                )
            state["calls"] = calls + 1

    def record(self, prompt_tokens: int, completion_tokens: int) -> None:
        """Add the tokens a reserved call actually used."""
        with self._locked_state() as state:
            state["prompt_tokens"] += int(prompt_tokens)
            state["completion_tokens"] += int(completion_tokens)

    def used(self) -> dict[str, int]:
        """``{"calls", "prompt_tokens", "completion_tokens", "tokens", "refused"}`` so far."""
        with self._locked_state() as state:
            out = {"calls": state["calls"], "prompt_tokens": state["prompt_tokens"],
                   "completion_tokens": state["completion_tokens"], "refused": state["refused"]}
        out["tokens"] = out["prompt_tokens"] + out["completion_tokens"]
        return out

    @property
    def exhausted(self) -> bool:
        """True when no further call can be made (the calls cap is reached, or tokens are)."""
        u = self.used()
        return (self.max_calls is not None and u["calls"] >= self.max_calls) or (
            self.max_tokens is not None and u["tokens"] >= self.max_tokens
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_calls={self.max_calls}, max_tokens={self.max_tokens}, used={self.used()})"


class FileBudget(Budget):
    """A budget shared by processes (xdist workers) through a JSON counter file.

    Every read-modify-write holds an exclusive lock on ``<path>.lock``
    (:func:`pytest_beam.files.file_lock`) and replaces the counter file atomically. Put the file in
    the run directory; the controller may create it (or call :meth:`reset`) before workers start.
    The caps are per object: give every worker the same caps.
    """

    def __init__(self, path: str | os.PathLike[str], max_calls: int | None = None,
                 max_tokens: int | None = None) -> None:
        super().__init__(max_calls=max_calls, max_tokens=max_tokens)
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @classmethod
    def in_run_dir(cls, run_dir: str | os.PathLike[str], max_calls: int | None = None,
                   max_tokens: int | None = None) -> FileBudget:
        return cls(Path(run_dir) / "budget.json", max_calls=max_calls, max_tokens=max_tokens)

    def reset(self) -> None:
        with self._locked_state() as state:
            state.update(_empty_state())

    @contextmanager
    def _locked_state(self) -> Iterator[BudgetState]:
        with self._lock, file_lock(self._lock_path):  # threads of this process, then processes
            state = _empty_state()
            try:
                state.update(json.loads(self.path.read_text(encoding="utf-8")))
            except FileNotFoundError:
                pass
            before = dict(state)
            try:
                yield state
            finally:
                if state != before:
                    atomic_write(self.path, json.dumps(state, sort_keys=True))

    def __repr__(self) -> str:
        return f"FileBudget({str(self.path)!r}, max_calls={self.max_calls}, max_tokens={self.max_tokens})"

"""The one way a model client is opened from the run's settings, and what the embedded model changes in them.

The session's model side (``session/model_side.py``), ``pytest-beam rejudge`` and ``pytest-beam
judge-check`` all open their client here, so the endpoint, its key, timeouts, retries,
concurrency, the cache and the cache's name for the embedded model are read from the settings
the same way everywhere; each adds only what is its own (the run's journal, cassette, spend cap
and trace; a judge alone for the commands).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from .llm import Budget, Cassette, Meter, ModelClient
    from .llm.replies import CallEvent
    from .settings import Settings

__all__ = ["EMBEDDED_DEFAULTS", "EmbeddedDefaults", "judge_only", "open_client"]


class EmbeddedDefaults(TypedDict, total=False):
    """Settings, by name, that a run on the embedded model changes unless the user set them (each
    one optional: a run's changes, session/endpoint.py's EmbeddedChanges, leave out what the user set)."""

    concurrency: int
    timeout: float
    agent_timeout: float
    tool_mode: Literal["auto", "native", "json"]
    max_calls: int | None
    max_tokens: int | None


# The embedded server has one slot and makes ~20 tokens/s on 2 cores: one request at a time,
# long timeouts, and JSON actions (its native tool calls do not parse on llama.cpp's server). It
# costs nothing, so the lite set's default spend caps (a guard on money) do not apply to it.
EMBEDDED_DEFAULTS: EmbeddedDefaults = {"concurrency": 1, "timeout": 900.0, "agent_timeout": 1800.0,
                                       "tool_mode": "json", "max_calls": None, "max_tokens": None}


def judge_only(judge_model: str) -> Mapping[str, str | None]:
    """The roles of a client that only judges (rejudge, judge-check): the judge's model for each."""
    return {"agent": judge_model, "extraction": None, "resolution": None, "judge": judge_model}


def open_client(settings: Settings, *, meter: Meter, roles: Mapping[str, str | None] | None = None,
                cassette: Cassette | None = None, budget: Budget | None = None,
                trace: Callable[[CallEvent], None] | None = None) -> ModelClient:
    """A model client on the settings' endpoint: ``roles`` (default: the settings' model per role)."""
    from .llm import EndpointConfig, ModelClient, ResponseCache, RoleModels

    roles = roles or settings.role_models()
    agent = roles["agent"]
    if agent is None:  # the session never asks without a model; the commands name their judge
        raise ValueError("no model is set (--beam-model), so there is no model client")
    return ModelClient(
        EndpointConfig(base_url=settings.base_url, api_key=settings.api_key, timeout_s=settings.timeout,
                       max_retries=settings.max_retries, throttle_wait_s=settings.throttle_wait,
                       concurrency=settings.concurrency,
                       identity=settings.endpoint_identity),
        RoleModels(agent=agent, extraction=roles["extraction"], resolution=roles["resolution"], judge=roles["judge"]),
        meter=meter, cache=ResponseCache(settings.cache) if settings.cache else None, cassette=cassette,
        budget=budget, trace=trace,
    )

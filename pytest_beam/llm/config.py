"""Endpoint and per-role model configuration (plain frozen dataclasses, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeGuard, get_args

from ..redaction import url_without_credentials

Role = Literal["extraction", "resolution", "agent", "judge"]
"""The phase a chat call is metered under. Embeddings are metered under ``"embedding"``."""

ROLES: tuple[str, ...] = get_args(Role)
EMBEDDING_ROLE = "embedding"


def is_role(name: str) -> TypeGuard[Role]:
    """Whether ``name`` (a relay path's part, say) is a chat role; a type checker then knows it is."""
    return name in ROLES


@dataclass(frozen=True)
class EndpointConfig:
    """One OpenAI-compatible endpoint.

    ``base_url`` is the API root including ``/v1`` (e.g. ``http://127.0.0.1:8080/v1``). ``None``
    means "no endpoint": the client then works only from a cassette / cache and raises
    :class:`~pytest_beam.llm.errors.ModelEndpointError` if it would need the network. The
    client never falls back to api.openai.com or to ``OPENAI_*`` environment variables by itself;
    resolving those is the settings layer's job.

    ``api_key`` is hidden from ``repr``, and so is any ``user:password@`` in ``base_url``
    (:attr:`display_url` is the URL to show). ``None`` sends a placeholder (local servers need none).

    ``max_retries`` counts retries after the first attempt (so at most ``max_retries + 1``
    HTTP requests per call). ``backoff_base_s`` is the first backoff delay (doubled per retry,
    with jitter, capped at ``backoff_max_s``); a ``Retry-After`` header replaces the computed
    delay, capped at ``retry_after_cap_s``. A 429 (too many requests: the endpoint busy, not broken) is retried
    without counting against ``max_retries`` while the call has waited on such answers for less
    than ``throttle_wait_s``: under several processes sharing a rate-limited endpoint, six quick
    429s are the queue, not a failure (bench/throughput.py lost 60 of 100 questions that way).
    ``max_retries=0`` retries nothing. ``concurrency`` is the number of requests in flight
    per base URL in this process (shared by every client of that URL; the first client to use a
    URL fixes it). ``seed=None`` sends no seed.
    """

    base_url: str | None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0
    max_retries: int = 5
    concurrency: int = 4
    seed: int | None = 0
    temperature: float = 0.0
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_cap_s: float = 60.0
    throttle_wait_s: float = 600.0
    # What the response cache knows the endpoint as: the same server on another port is the same
    # endpoint (the embedded model picks a free port at every start). None: its base URL.
    identity: str | None = None

    def __repr__(self) -> str:
        # base_url without any user:password@ part; api_key never shown
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in (
            "timeout_s", "max_retries", "concurrency", "seed", "temperature",
            "backoff_base_s", "backoff_max_s", "retry_after_cap_s", "throttle_wait_s"))
        return f"EndpointConfig(base_url={self.display_url!r}, {fields})"

    @property
    def display_url(self) -> str | None:
        """The base URL fit to show or write: any credentials in it removed."""
        return url_without_credentials(self.base_url) if self.base_url else self.base_url

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")

    @property
    def endpoint_key(self) -> str:
        """Normalised base URL (the per-endpoint semaphore's key)."""
        return (self.base_url or "").rstrip("/")

    @property
    def cache_identity(self) -> str:
        """The endpoint in the response cache's key: its identity, else its base URL."""
        return self.identity or self.endpoint_key


@dataclass(frozen=True)
class RoleModels:
    """The model per role; every role defaults to the agent's model."""

    agent: str
    extraction: str | None = None
    resolution: str | None = None
    judge: str | None = None

    def for_role(self, role: str) -> str:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        return getattr(self, role) or self.agent

    def to_dict(self) -> dict[str, str]:
        """Resolved model per role (for records)."""
        return {role: self.for_role(role) for role in ROLES}

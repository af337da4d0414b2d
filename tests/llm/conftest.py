"""Fixtures of the model-layer tests.

``model_server`` / ``model_server_factory`` come from tests/model_server.py (the scripted
OpenAI-compatible server); ``make_client`` builds a :class:`ModelClient` with fast backoff.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
from tests.model_server import ScriptedModelServer

FAST = {"backoff_base_s": 0.001, "backoff_max_s": 0.01, "timeout_s": 5.0}


@pytest.fixture
def make_client() -> Callable[..., ModelClient]:
    """``make_client(server_or_base_url, *, api_key=None, models=None, endpoint={...}, **client_kwargs)``."""
    clients: list[ModelClient] = []

    def make(server: ScriptedModelServer | str | None, *, api_key: str | None = None,
             models: RoleModels | None = None, endpoint: dict[str, Any] | None = None, **kwargs: Any) -> ModelClient:
        base_url = server.base_url if isinstance(server, ScriptedModelServer) else server
        config = EndpointConfig(base_url=base_url, api_key=api_key, **{**FAST, **(endpoint or {})})
        client = ModelClient(config, models or RoleModels(agent="agent-model", judge="judge-model"), **kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()

"""Shared by the systems tests: conversation 17 of BEAM's 100K split (real data, read in place
from BEAM_DATA) and a model client on the scripted HTTP model server (the test double for the
answering model only; nothing it answers says anything about quality).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_beam.data.records import Document, ProbingQuestion
from pytest_beam.system import SystemContext
from tests.model_server import ScriptedModelServer

CONVERSATION = "17"
HEADER = re.compile(r"^### message (\d+) \| session (\d+) \| (\S+) \| (user|assistant)$", re.M)


@dataclass(frozen=True)
class Conv:
    documents: list[Document]
    questions: list[ProbingQuestion]

    def question(self, ability: str, index: int) -> ProbingQuestion:
        return next(q for q in self.questions if q.ability == ability and q.index == index)

    @property
    def messages(self) -> list[Any]:
        return [m for d in self.documents for m in d.messages]


@pytest.fixture(scope="session")
def conv17(beam_data_dir: Path) -> Conv:
    from pytest_beam.data.sets import load_set

    bench_set = load_set("full", beam_data_dir)
    return Conv(list(bench_set.documents[CONVERSATION]),
                [q for q in bench_set.questions if q.conversation_id == CONVERSATION])


@pytest.fixture
def models(model_server: ScriptedModelServer) -> Iterator[Any]:
    from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels

    client = ModelClient(EndpointConfig(base_url=model_server.base_url, max_retries=0, backoff_base_s=0.001,
                                        backoff_max_s=0.01, timeout_s=10.0), RoleModels(agent="scripted-model"))
    yield client
    client.close()


def _no_neo4j() -> Any:
    raise AssertionError("a baseline system asked for Neo4j")


@pytest.fixture
def make_context(models: Any, tmp_path: Path) -> Callable[..., SystemContext]:
    """``make_context(gold_evidence=None, **settings)``: the context the harness would lend;
    settings default to the local embedder, and starting Neo4j fails the test."""

    def make(gold_evidence: Any = None, **settings: Any) -> SystemContext:
        return SystemContext(conversation_id=CONVERSATION, models=models,
                             settings=SimpleNamespace(**{"embeddings": "local", **settings}),
                             work_dir=tmp_path, start_neo4j=_no_neo4j, gold_evidence=gold_evidence)

    return make


def sent_prompt(server: ScriptedModelServer) -> tuple[str, str, list[int]]:
    """(system content, user content, message ids in the order shown) of the one chat request."""
    [request] = server.chat_requests
    system, user = request.messages
    assert system["role"] == "system" and user["role"] == "user"
    return system["content"], user["content"], [int(m.group(1)) for m in HEADER.finditer(system["content"])]


def request_tokens(server: ScriptedModelServer) -> int:
    from pytest_beam.memory.tokens import count_tokens

    [request] = server.chat_requests
    return sum(count_tokens(m["content"]) for m in request.messages)

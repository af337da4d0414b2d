"""The built-in Agentic GraphRAG's dry-run estimate: its ingest and agent calls, from the run's real inputs.

Counted from what the system would send: each conversation's chunks (the real chunker on the
real documents), the real extraction prompt and schema, the agent's system prompt and tool
schemas, every selected question. What cannot be known before the model speaks — how many
agent steps it takes, how long it answers, how many entity pairs are ambiguous — is an
assumption, named in ASSUMPTIONS and printed with the estimate. The judge's calls are the
harness's to add (`session/dry_run.py`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypedDict

from ..system import Estimate, PhaseEstimate

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..settings import Settings


class Assumptions(TypedDict):
    """What the estimate assumes: two ratios, the rest whole counts of steps and tokens."""

    extraction_completion_ratio: float
    resolution_calls_per_chunk: float
    resolution_prompt_tokens: int
    resolution_completion_tokens: int
    agent_steps: int
    tool_result_tokens: int
    agent_completion_tokens: int


ASSUMPTIONS: Assumptions = {
    "extraction_completion_ratio": 0.35,  # completion tokens per chunk token (entities + statements)
    "resolution_calls_per_chunk": 0.45,  # batched resolution and update decisions (bench/ingest_cost.py: 0.43-0.45)
    "resolution_prompt_tokens": 550,
    "resolution_completion_tokens": 120,
    # model steps per question, tools and the final answer included, and what one tool result adds
    # to the agent's context: measured 3.0 steps and 3,390 prompt tokens per question on the full
    # set (scripted agent, bench/overhead.py's run; p95 4,033), 3,224 on the complete set (p95
    # 4,053), and 2.5 steps and 4,160 tokens on the lite set with the embedded model (a fresh-clone
    # run and the cassette's recording); these give ~5,450 per question, above all three, where
    # 5 steps x 700 gave ~14,600
    "agent_steps": 3,
    "tool_result_tokens": 300,
    "agent_completion_tokens": 120,
}


def _tokens(text: str) -> int:
    from .tokens import count_tokens

    return count_tokens(text)


def _agent_prompt_tokens() -> int:
    from .prompts_agent import SYSTEM_PROMPT
    from .tools import openai_tools

    return _tokens(SYSTEM_PROMPT) + _tokens(json.dumps(openai_tools()))


def estimate_graphrag(bench_set: BenchmarkSet, questions: list[ProbingQuestion], settings: Settings) -> Estimate:
    """Extraction and resolution per chunk of each conversation asked about, the agent's steps per question."""
    from .chunking import chunk_documents
    from .extraction_schema import Extraction
    from .prompts_ingest import extraction_messages

    a = ASSUMPTIONS
    estimate = Estimate(phases={p: PhaseEstimate() for p in ("extraction", "resolution", "agent")},
                        assumptions=a)
    schema_tokens = _tokens(json.dumps(Extraction.model_json_schema()))  # sent with every extraction call
    conversations = sorted({q.conversation_id for q in questions}, key=int)
    for cid in conversations:
        chunks = chunk_documents(bench_set.documents[cid], settings.chunk_tokens)
        estimate.chunks[cid] = len(chunks)
        for chunk in chunks:
            prompt = schema_tokens + sum(_tokens(m.get("content") or "") for m in extraction_messages(chunk))
            estimate.phases["extraction"].add(1, prompt, int(chunk.tokens * a["extraction_completion_ratio"]) + 60)
        resolution_calls = round(len(chunks) * a["resolution_calls_per_chunk"])
        estimate.phases["resolution"].add(resolution_calls, resolution_calls * a["resolution_prompt_tokens"],
                                          resolution_calls * a["resolution_completion_tokens"])
    agent_base = _agent_prompt_tokens()
    steps = min(a["agent_steps"], settings.agent_steps)
    for q in questions:
        estimate.questions += 1
        question_tokens = _tokens(q.question)
        for step in range(steps):
            estimate.phases["agent"].add(1, agent_base + question_tokens + step * a["tool_result_tokens"],
                                         a["agent_completion_tokens"])
    estimate.summary = _summary(estimate, settings)
    return estimate


def _summary(estimate: Estimate, settings: Settings) -> str:
    from ..data.ids import conversation_label

    tier = "" if settings.tier == "100K" else f" of {settings.tier}"
    chunks = ", ".join(f"{conversation_label(settings.tier, c)}: {n}" for c, n in estimate.chunks.items())
    return (f"pytest-beam dry run (the built-in Agentic GraphRAG): {settings.mode} set{tier}, "
            f"{estimate.questions} questions, {sum(estimate.chunks.values())} chunks of ~{settings.chunk_tokens} "
            f"tokens ({chunks})"
            + (f"; judge calls x {settings.judge_runs} judge runs" if settings.judge_runs > 1 else ""))

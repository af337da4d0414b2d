"""The dry-run estimate: calls and tokens by phase, computed from the run's real inputs.

Counted from what the run would send: each conversation's chunks (the real chunker on the real
documents), the real prompts (extraction, agent system prompt and tool schemas, BEAM's judge
prompt), every selected question and its rubric. What cannot be known before the model speaks
— how many agent steps it takes, how long it answers, how many entity pairs are ambiguous — is
an assumption, named in ASSUMPTIONS and printed with the estimate. With ``--beam-judge-runs N``
every judge call (rubric items and event-ordering alignment alike) is made N times.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, TypedDict

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
    answer_tokens: int
    judge_completion_tokens: int


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
    "answer_tokens": 250,
    "judge_completion_tokens": 90,
}


@dataclass
class PhaseEstimate:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, calls: int, prompt: int, completion: int) -> None:
        self.calls += calls
        self.prompt_tokens += prompt
        self.completion_tokens += completion


@dataclass
class Estimate:
    phases: dict[str, PhaseEstimate] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    questions: int = 0

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.phases.values())

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.phases.values())

    def over_cap(self, settings: Settings, require_caps: bool = True) -> str | None:
        """Why the run may not start; `require_caps` False where no money is spent (the embedded model)."""
        problems = []
        if settings.max_calls is not None and self.calls > settings.max_calls:
            problems.append(f"{self.calls:,} calls > cap {settings.max_calls:,} "
                            f"(over by {self.calls - settings.max_calls:,}; raise it with --beam-max-calls)")
        if settings.max_tokens is not None and self.tokens > settings.max_tokens:
            problems.append(f"{self.tokens:,} tokens > cap {settings.max_tokens:,} "
                            f"(over by {self.tokens - settings.max_tokens:,}; raise it with --beam-max-tokens)")
        uncapped = settings.max_calls is None or settings.max_tokens is None
        if require_caps and settings.mode in ("full", "complete") and uncapped:
            problems.append(f"the {settings.mode} set has no default spend cap: set --beam-max-calls and "
                            "--beam-max-tokens "
                            f"(the estimate is {self.calls:,} calls and {self.tokens:,} tokens)")
        return ("the estimate is over the spend cap: " + "; ".join(problems)) if problems else None


def _tokens(text: str) -> int:
    from ..memory.tokens import count_tokens

    return count_tokens(text)


def _agent_prompt_tokens() -> int:
    from ..memory.prompts_agent import SYSTEM_PROMPT
    from ..memory.tools import openai_tools

    specs = openai_tools()
    return _tokens(SYSTEM_PROMPT) + _tokens(json.dumps(specs))


def estimate_run(bench_set: BenchmarkSet, questions: list[ProbingQuestion], settings: Settings) -> Estimate:
    from ..memory.chunking import chunk_documents
    from ..memory.extraction_schema import Extraction
    from ..memory.prompts_ingest import extraction_messages
    a = ASSUMPTIONS
    estimate = Estimate(phases={p: PhaseEstimate() for p in ("extraction", "resolution", "agent", "judge")})
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
    runs = settings.judge_runs  # every judge call, rubric item or alignment, is repeated per run
    for q in questions:
        estimate.questions += 1
        question_tokens = _tokens(q.question)
        for step in range(steps):
            estimate.phases["agent"].add(1, agent_base + question_tokens + step * a["tool_result_tokens"],
                                         a["agent_completion_tokens"])
        add_judge(estimate.phases["judge"], q, runs)
    add_judge_check(estimate, bench_set, questions, settings)
    return estimate


def add_judge_check(estimate: Estimate, bench_set: BenchmarkSet, questions: list[ProbingQuestion],
                    settings: Settings) -> None:
    """The judge check's calls (``--beam-judge-check``), when it is on: one call per sampled case
    and judge run; a rubric case costs a judge prompt, an event pair a classifier prompt."""
    from ..scoring.calibration import build_cases, sample_cases
    from .judge_check import sample_size

    size = sample_size(settings)
    if size is False:
        return
    judge_base, classifier_base = _judge_bases()
    by_id = {q.id: q for q in questions}
    phase = estimate.phases.setdefault("judge check", PhaseEstimate())
    runs = settings.judge_runs
    for case in sample_cases(build_cases(questions, bench_set.references), size):
        if case.kind in ("same_event", "other_event"):
            phase.add(runs, runs * (classifier_base + _tokens(case.rubric_item) + _tokens(case.answer)), runs * 2)
        else:
            prompt = (judge_base + _tokens(by_id[case.question_id].question) + _tokens(case.rubric_item)
                      + _tokens(case.answer))
            phase.add(runs, runs * prompt, runs * ASSUMPTIONS["judge_completion_tokens"])


@lru_cache(maxsize=1)
def _judge_bases() -> tuple[int, int]:
    from ..scoring.prompts import BINARY_CLASSIFIER_SYSTEM, JUDGE_PROMPT

    return _tokens(JUDGE_PROMPT), _tokens(BINARY_CLASSIFIER_SYSTEM) + 30


def add_judge(phase: PhaseEstimate, q: ProbingQuestion, runs: int = 1) -> None:
    """The judge's calls for one question: the same whichever system answered it; every call,
    rubric item or event-ordering alignment, is repeated per judge run."""
    a = ASSUMPTIONS
    judge_base, classifier_base = _judge_bases()
    question_tokens = _tokens(q.question)
    if q.ability == "event_ordering":
        events = len(q.rubric)
        calls = events * (events + 1) // 2  # each answer line against the unused events, on average
        rubric_tokens = sum(_tokens(r) for r in q.rubric) // max(events, 1)
        phase.add(runs * calls, runs * calls * (classifier_base + rubric_tokens + 25), runs * calls * 2)
    else:
        for item in q.rubric:
            phase.add(runs, runs * (judge_base + question_tokens + _tokens(item) + a["answer_tokens"]),
                      runs * a["judge_completion_tokens"])


def format_estimate(estimate: Estimate, settings: Settings) -> str:
    from ..data.ids import conversation_label

    tier = "" if settings.tier == "100K" else f" of {settings.tier}"
    rows = [f"pytest-beam dry run (the built-in Agentic GraphRAG): {settings.mode} set{tier}, "
            f"{estimate.questions} questions, "
            f"{sum(estimate.chunks.values())} chunks of ~{settings.chunk_tokens} tokens "
            f"({', '.join(f'{conversation_label(settings.tier, c)}: {n}' for c, n in estimate.chunks.items())})"
            + (f"; judge calls x {settings.judge_runs} judge runs" if settings.judge_runs > 1 else ""),
            f"{'phase':<12}{'calls':>10}{'prompt tok':>14}{'completion tok':>16}{'total tok':>14}"]
    for name, p in estimate.phases.items():
        rows.append(f"{name:<12}{p.calls:>10,}{p.prompt_tokens:>14,}{p.completion_tokens:>16,}{p.tokens:>14,}")
    total_prompt = sum(p.prompt_tokens for p in estimate.phases.values())
    total_completion = sum(p.completion_tokens for p in estimate.phases.values())
    rows.append(f"{'total':<12}{estimate.calls:>10,}{total_prompt:>14,}{total_completion:>16,}{estimate.tokens:>14,}")
    if settings.max_calls is None and settings.max_tokens is None:
        rows.append("no spend cap set" + (" (a run of this set on a paid endpoint needs --beam-max-calls and "
                                          "--beam-max-tokens)" if settings.mode != "lite" else ""))
    else:
        caps = (f"cap: {settings.max_calls if settings.max_calls is not None else 'none'} calls, "
                f"{settings.max_tokens if settings.max_tokens is not None else 'none'} tokens")
        problem = estimate.over_cap(settings)
        rows.append(caps + (f" -> {problem}" if problem else " -> within the cap"))
    rows.append("assumptions: " + ", ".join(f"{k}={v}" for k, v in ASSUMPTIONS.items()))
    return "\n".join(rows)

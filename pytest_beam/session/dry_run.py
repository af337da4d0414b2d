"""The dry-run estimate: calls and tokens by phase for each selected system, and against the spend cap.

Each system answers for its own calls (`MemorySystem.estimate`, through the registry's
`estimate_of`): the built-in graphrag counts its extraction, resolution and agent calls
(`memory/graphrag_estimate.py`), a baseline one answering call per question (`systems/answer_estimate.py`).
An outside system (mem0, graphiti) or a conftest's cannot say: it is listed without an estimate
and left out of the total. What the harness adds is the same whoever answered: the judge's
calls, counted from BEAM's judge prompt and each question's rubric (with ``--beam-judge-runs N``
every judge call, rubric items and event-ordering alignment alike, is made N times), and the
judge check's (``--beam-judge-check``). What the judge's calls assume is named in
JUDGE_ASSUMPTIONS and printed with the systems' own assumptions.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from ..system import ANSWER_TOKENS, Estimate, PhaseEstimate

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..settings import Settings

JUDGE_ASSUMPTIONS: dict[str, float] = {
    "answer_tokens": ANSWER_TOKENS,  # the answer the judge reads, whoever wrote it
    "judge_completion_tokens": 90,
}
TABLE_HEADER = f"{'phase':<12}{'calls':>10}{'prompt tok':>14}{'completion tok':>16}{'total tok':>14}"


def estimate_systems(bench_set: BenchmarkSet, pairs: list[tuple[str, ProbingQuestion]],
                     settings: Settings) -> dict[str, Estimate | None]:
    """{system: its estimate with the judge's calls} in the selected order; None where the system
    cannot say. The run's judge check goes with the default system's estimate, where it always was."""
    from ..system_registry import DEFAULT_SYSTEM
    from ..systems import estimate_of

    by_system: dict[str, list[ProbingQuestion]] = {}
    for system, q in pairs:
        by_system.setdefault(system, []).append(q)
    out: dict[str, Estimate | None] = {}
    for system, qs in by_system.items():
        estimate = out[system] = estimate_of(system, bench_set, qs, settings)
        if estimate is None:
            continue
        judge = estimate.phases.setdefault("judge", PhaseEstimate())
        for q in qs:
            add_judge(judge, q, settings.judge_runs)
        if system == DEFAULT_SYSTEM:
            add_judge_check(estimate, bench_set, qs, settings)
    return out


def _tokens(text: str) -> int:
    from ..memory.tokens import count_tokens

    return count_tokens(text)


@lru_cache(maxsize=1)
def _judge_bases() -> tuple[int, int]:
    from ..scoring.prompts import BINARY_CLASSIFIER_SYSTEM, JUDGE_PROMPT

    return _tokens(JUDGE_PROMPT), _tokens(BINARY_CLASSIFIER_SYSTEM) + 30


def add_judge(phase: PhaseEstimate, q: ProbingQuestion, runs: int = 1) -> None:
    """The judge's calls for one question: the same whichever system answered it; every call,
    rubric item or event-ordering alignment, is repeated per judge run."""
    judge_base, classifier_base = _judge_bases()
    question_tokens = _tokens(q.question)
    if q.ability == "event_ordering":
        events = len(q.rubric)
        calls = events * (events + 1) // 2  # each answer line against the unused events, on average
        rubric_tokens = sum(_tokens(r) for r in q.rubric) // max(events, 1)
        phase.add(runs * calls, runs * calls * (classifier_base + rubric_tokens + 25), runs * calls * 2)
    else:
        for item in q.rubric:
            phase.add(runs, runs * (judge_base + question_tokens + _tokens(item) + ANSWER_TOKENS),
                      runs * int(JUDGE_ASSUMPTIONS["judge_completion_tokens"]))


def add_judge_check(estimate: Estimate, bench_set: BenchmarkSet, questions: list[ProbingQuestion],
                    settings: Settings) -> None:
    """The judge check's calls (``--beam-judge-check``), when it is on: one call per sampled case
    and judge run; a rubric case costs a judge prompt, an event pair a classifier prompt."""
    from ..scoring.calibration import build_cases, sample_cases
    from .calibration_at_finish import sample_size

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
            phase.add(runs, runs * prompt, runs * int(JUDGE_ASSUMPTIONS["judge_completion_tokens"]))


def total_of(estimates: dict[str, Estimate | None]) -> Estimate:
    """The sum of the estimable systems, phase by phase (what the spend cap is checked against)."""
    total = Estimate()
    for est in estimates.values():
        if est is None:
            continue
        total.questions += est.questions
        for name, phase in est.phases.items():
            total_phase = total.phases.setdefault(name, PhaseEstimate())
            total_phase.add(phase.calls, phase.prompt_tokens, phase.completion_tokens)
        for cid, n in est.chunks.items():
            total.chunks[cid] = total.chunks.get(cid, 0) + n
    return total


def over_cap(estimate: Estimate, settings: Settings, require_caps: bool = True) -> str | None:
    """Why the run may not start; `require_caps` False where no money is spent (the embedded model)."""
    problems = []
    calls, tokens = estimate.calls, estimate.tokens
    if settings.max_calls is not None and calls > settings.max_calls:
        problems.append(f"{calls:,} calls > cap {settings.max_calls:,} "
                        f"(over by {calls - settings.max_calls:,}; raise it with --beam-max-calls)")
    if settings.max_tokens is not None and tokens > settings.max_tokens:
        problems.append(f"{tokens:,} tokens > cap {settings.max_tokens:,} "
                        f"(over by {tokens - settings.max_tokens:,}; raise it with --beam-max-tokens)")
    uncapped = settings.max_calls is None or settings.max_tokens is None
    if require_caps and settings.mode in ("full", "complete") and uncapped:
        problems.append(f"the {settings.mode} set has no default spend cap: set --beam-max-calls and "
                        "--beam-max-tokens "
                        f"(the estimate is {calls:,} calls and {tokens:,} tokens)")
    return ("the estimate is over the spend cap: " + "; ".join(problems)) if problems else None


def table(estimate: Estimate) -> list[str]:
    """The estimate's phases, then their total."""
    rows = [TABLE_HEADER]
    for name, p in estimate.phases.items():
        rows.append(f"{name:<12}{p.calls:>10,}{p.prompt_tokens:>14,}{p.completion_tokens:>16,}{p.tokens:>14,}")
    prompt = sum(p.prompt_tokens for p in estimate.phases.values())
    completion = sum(p.completion_tokens for p in estimate.phases.values())
    rows.append(f"{'total':<12}{estimate.calls:>10,}{prompt:>14,}{completion:>16,}{estimate.tokens:>14,}")
    return rows


def assumptions_line(estimates: list[Estimate | None]) -> str:
    """The systems' own assumptions, in the order they were selected, then the judge's."""
    named: dict[str, object] = {}
    for est in estimates:
        for key, value in (est.assumptions if est is not None else {}).items():
            if key not in JUDGE_ASSUMPTIONS:
                named.setdefault(key, value)
    return "assumptions: " + ", ".join(f"{k}={v}" for k, v in {**named, **JUDGE_ASSUMPTIONS}.items())


def format_estimate(estimate: Estimate, settings: Settings) -> str:
    """The default run's estimate: the system's line and table, the cap, the assumptions."""
    rows = [estimate.summary, *table(estimate)]
    if settings.max_calls is None and settings.max_tokens is None:
        rows.append("no spend cap set" + (" (a run of this set on a paid endpoint needs --beam-max-calls and "
                                          "--beam-max-tokens)" if settings.mode != "lite" else ""))
    else:
        problem = over_cap(estimate, settings)
        rows.append(_caps(settings) + (f" -> {problem}" if problem else " -> within the cap"))
    rows.append(assumptions_line([estimate]))
    return "\n".join(rows)


def format_systems(estimates: dict[str, Estimate | None], settings: Settings) -> str:
    """One block per system, then the total against the cap."""
    blocks = []
    for system, est in estimates.items():
        if est is not None:
            blocks.append("\n".join([f"[{system}]", est.summary, *table(est)]))
            continue
        from ..system_registry import OUTSIDE_SYSTEMS

        if system in OUTSIDE_SYSTEMS:
            blocks.append(f"[{system}] an outside system: its library decides its calls (through the model relay, "
                          "metered as its own rows), no estimate (not in the total)")
        else:
            blocks.append(f"[{system}] a custom system: its calls are its own, no estimate (not in the total)")
    total = total_of(estimates)
    problem = over_cap(total, settings)
    footer = [f"all systems: {total.calls:,} calls, {total.tokens:,} tokens; "
              + _caps(settings) + (f" -> {problem}" if problem else " -> within the cap"),
              assumptions_line(list(estimates.values()))]
    return "\n\n".join(blocks) + "\n\n" + "\n".join(footer)


def _caps(settings: Settings) -> str:
    return (f"cap: {settings.max_calls if settings.max_calls is not None else 'none'} calls, "
            f"{settings.max_tokens if settings.max_tokens is not None else 'none'} tokens")

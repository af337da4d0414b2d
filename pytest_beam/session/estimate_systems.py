"""The dry run with several systems: each selected system estimated on its own.

`graphrag` is the built-in estimate (estimate.py). A baseline makes no ingest call and one
answering call per question; its prompt is counted from the real prompt it would send where
that needs no model: `long-context` (the newest messages that fit the budget), `gold-evidence`
(the question's source messages) and `bm25` (its real ranking) exactly; `dense` needs the
embedder to rank, so it is assumed to send k messages of the conversation's mean message
length (named in its line). The judge's calls are the same for every system. A custom
system's calls are its own: it is listed with no estimate and left out of the total.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .estimate import ASSUMPTIONS, Estimate, PhaseEstimate, add_judge, estimate_run, format_estimate

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..settings import Settings

BASELINES = ("long-context", "bm25", "dense", "gold-evidence")


def estimate_baseline(system: str, bench_set: BenchmarkSet, questions: list[ProbingQuestion],
                      settings: Settings) -> Estimate:
    """One answering call per question with the context tokens it would send, and the judge's calls."""
    from ..memory.tokens import count_tokens
    from ..systems.answering import (
        NO_MESSAGES,
        SEPARATOR,
        build_prompt,
        chat_messages,
        fit_to_budget,
        prompt_tokens,
        render_message,
    )

    budget, k = settings.context_tokens, settings.retrieval_k
    estimate = Estimate(phases={"agent": PhaseEstimate(), "judge": PhaseEstimate()})
    by_conv: dict[str, list[ProbingQuestion]] = {}
    for q in questions:
        by_conv.setdefault(q.conversation_id, []).append(q)
    for cid, qs in sorted(by_conv.items(), key=lambda kv: int(kv[0])):
        messages = chat_messages(bench_set.documents[cid])
        estimate.chunks[cid] = 0  # no ingest call
        index = None
        if system == "bm25":
            from ..systems.bm25 import BM25Index

            index = BM25Index([m.text for m in messages])
        by_id = {m.id: m for m in messages} if system == "gold-evidence" else {}
        sep = count_tokens(SEPARATOR)
        costs = [count_tokens(render_message(m)) + sep for m in reversed(messages)]  # newest first, once
        mean_tokens = sum(costs) / max(len(costs), 1)
        for q in qs:
            estimate.questions += 1
            if system == "long-context":
                empty = prompt_tokens(build_prompt([], q.question))
                context = _newest_that_fit(costs, empty, empty - count_tokens(NO_MESSAGES), budget)
            elif system == "gold-evidence":
                sources = [by_id[i] for i in sorted(set(q.source_message_ids)) if i in by_id]
                context = fit_to_budget(sources, q.question, budget).context_tokens
            elif index is not None:  # bm25
                context = fit_to_budget([messages[i] for i, _ in index.rank(q.question, k)], q.question,
                                        budget).context_tokens
            else:  # dense: k messages of mean length (ranking needs the embedder)
                base = fit_to_budget([], q.question, budget).context_tokens
                context = min(budget, base + round(min(k, len(messages)) * mean_tokens))
            estimate.phases["agent"].add(1, context, ASSUMPTIONS["answer_tokens"])
            add_judge(estimate.phases["judge"], q, settings.judge_runs)
    return estimate


def _newest_that_fit(costs: list[int], empty_prompt: int, base: int, budget: int) -> int:
    """long-context's prompt: the newest messages while they fit (fit_to_budget's rule, with the
    per-message counts summed once per conversation instead of recounted per question)."""
    total, taken = base, 0
    for cost in costs:
        if total + cost > budget:
            break
        total, taken = total + cost, taken + 1
    return total if taken else empty_prompt


def estimate_systems(bench_set: BenchmarkSet, pairs: list[tuple[str, ProbingQuestion]],
                     settings: Settings) -> dict[str, Estimate | None]:
    """{system: its estimate} in the selected order; None for a custom system (not estimable)."""
    by_system: dict[str, list[ProbingQuestion]] = {}
    for system, q in pairs:
        by_system.setdefault(system, []).append(q)
    out: dict[str, Estimate | None] = {}
    for system, qs in by_system.items():
        if system == "graphrag":
            out[system] = estimate_run(bench_set, qs, settings)
        elif system in BASELINES:
            out[system] = estimate_baseline(system, bench_set, qs, settings)
        else:
            out[system] = None
    return out


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


def format_systems(estimates: dict[str, Estimate | None], settings: Settings) -> str:
    """One block per system, then the total against the cap."""
    blocks = []
    for system, est in estimates.items():
        if est is None:
            from ..systems import OUTSIDE_SYSTEMS

            if system in OUTSIDE_SYSTEMS:
                blocks.append(f"[{system}] an outside system: its library decides its calls (through the model relay, "
                              "metered as its own rows), no estimate (not in the total)")
            else:
                blocks.append(f"[{system}] a custom system: its calls are its own, no estimate (not in the total)")
            continue
        if system == "graphrag":
            body = format_estimate(est, settings).splitlines()[:-2]  # cap and assumptions once, below
        else:
            ctx = est.phases["agent"].prompt_tokens / max(est.questions, 1)
            note = (f"; dense assumed to send {settings.retrieval_k} messages of mean length"
                    if system == "dense" else "")
            body = [f"{system}: {est.questions} questions, no ingest call, one answering call per question, "
                    f"context ~{ctx:,.0f} tokens per question (budget {settings.context_tokens:,}){note}"
                    + (" [measurement aid]" if system == "gold-evidence" else ""),
                    f"{'phase':<12}{'calls':>10}{'prompt tok':>14}{'completion tok':>16}{'total tok':>14}"]
            for name, p in est.phases.items():
                body.append(f"{name:<12}{p.calls:>10,}{p.prompt_tokens:>14,}{p.completion_tokens:>16,}{p.tokens:>14,}")
            body.append(f"{'total':<12}{est.calls:>10,}{'':>14}{'':>16}{est.tokens:>14,}")
        blocks.append(f"[{system}]\n" + "\n".join(body))
    total = total_of(estimates)
    caps = (f"all systems: {total.calls:,} calls, {total.tokens:,} tokens; cap: "
            f"{settings.max_calls if settings.max_calls is not None else 'none'} calls, "
            f"{settings.max_tokens if settings.max_tokens is not None else 'none'} tokens")
    problem = total.over_cap(settings)
    blocks.append(caps + (f" -> {problem}" if problem else " -> within the cap"))
    blocks.append("assumptions: " + ", ".join(f"{k}={v}" for k, v in ASSUMPTIONS.items()))
    return "\n\n".join(blocks[:-2]) + "\n\n" + "\n".join(blocks[-2:])

"""Which way of asking BEAM's judge for its verdict agrees best with BEAM's own reference answers.

BEAM's judge prompt is kept word for word; what may change is how the reply is asked for. Each
variant runs the same calibration cases (pytest_beam.scoring.calibration: references against their
own rubric items, other questions' references, empty and "I don't know" answers, the
event-ordering classifier) through the same judge, and the table gives agreement, false passes,
false fails and Cohen's kappa, with the change against the first variant measured in the same run:

- score_first: the verdict's JSON schema in the prompt's own order, score then reason (the
  product's format before this bench);
- reason_first: the same fields, the reason first, so the score is written after the model has
  said why;
- plain: no response format at all; the reply is parsed from text;
- vote3: reason_first asked three times at temperature 0.7 (seeds 1, 2, 3); a case passes when
  most of the three pass it (the product's --beam-judge-runs 3, with sampling).

    .venv/bin/python bench/judge_formats.py [--mode full] [--sample 120] [--variants score_first,reason_first]
    .venv/bin/python bench/judge_formats.py --smoke [--cache DIR]   (lite, 3 cases, two variants)

With no --base-url the embedded model judges (started here). Replies are kept in the product's
response cache (--judge-cache, default .beam/cache as pytest-beam uses it; smoke: the cold --cache
folder), so a second run of the same cases costs nothing, and `pytest-beam judge-check` after this
bench replays the variant the product uses.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

from pytest_beam.data.sets import load_set  # noqa: E402
from pytest_beam.llm import EndpointConfig, Meter, ModelClient, ResponseCache, RoleModels  # noqa: E402
from pytest_beam.scoring.judge import JUDGE_FORMAT  # noqa: E402
from pytest_beam.scoring.judge_check import run_judge_check  # noqa: E402

VERDICT_NAME = JUDGE_FORMAT["json_schema"]["name"]


def _verdict_format(order: tuple[str, str]) -> dict[str, Any]:
    """BEAM's verdict fields in ``order``, each as the product's format writes it (so a variant
    that matches the product's format is the very same request, and shares its cache entries)."""
    fmt = copy.deepcopy(JUDGE_FORMAT)
    fields = fmt["json_schema"]["schema"]["properties"]
    fmt["json_schema"]["schema"]["properties"] = {name: fields[name] for name in order}
    fmt["json_schema"]["schema"]["required"] = list(order)
    return fmt


# variant -> (verdict format or None for plain, temperature, seeds)
VARIANTS: dict[str, tuple[dict[str, Any] | None, float, tuple[int, ...]]] = {
    "score_first": (_verdict_format(("score", "reason")), 0.0, (0,)),
    "reason_first": (_verdict_format(("reason", "score")), 0.0, (0,)),
    "plain": (None, 0.0, (0,)),
    "vote3": (_verdict_format(("reason", "score")), 0.7, (1, 2, 3)),
}


class VariantJudge:
    """The judge model as the scorer sees it, asking for the verdict the variant's way: the
    verdict's format swapped, and repeat N sent to the N-th seed's client."""

    def __init__(self, clients: list[ModelClient], verdict_format: dict[str, Any] | None) -> None:
        self.clients = clients
        self.verdict_format = verdict_format

    def chat(self, *, role: str, messages: list[dict], max_tokens: int | None = None,
             response_format: dict | None = None, repeat: int = 0, **kwargs: Any) -> Any:
        if response_format is not None and response_format.get("json_schema", {}).get("name") == VERDICT_NAME:
            response_format = self.verdict_format
        client = self.clients[repeat % len(self.clients)]
        return client.chat(role=role, messages=messages, max_tokens=max_tokens, response_format=response_format,
                           repeat=0 if len(self.clients) > 1 else repeat, **kwargs)


def _row(name: str, check: Any, base: Any | None, calls: int) -> list[str]:
    o = check.overall

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    def delta(a: float | None, b: float | None) -> str:
        return "-" if a is None or b is None else f"{b - a:+.3f}"

    kappa_iv = f"[{o.kappa_interval.low:.2f}, {o.kappa_interval.high:.2f}]" if o.kappa_interval else "-"
    return [name, str(o.n), fmt(o.agreement), f"{o.false_passes}/{o.expected_fail}",
            f"{o.false_fails}/{o.expected_pass}", fmt(o.kappa), kappa_iv,
            delta(base.overall.kappa, o.kappa) if base else "", str(calls), f"{check.seconds:.0f}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="full", choices=("lite", "full", "complete"))
    parser.add_argument("--sample", type=int, default=None, help="at most N cases (every kind); default all")
    parser.add_argument("--variants", default="score_first,reason_first", help=f"from {', '.join(VARIANTS)}")
    parser.add_argument("--base-url", default=os.environ.get("BEAM_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("BEAM_JUDGE_MODEL") or os.environ.get("BEAM_MODEL"))
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA"))
    parser.add_argument("--judge-cache", default=".beam/cache", help="response cache (default: pytest-beam's own)")
    add_smoke_options(parser)
    args = parser.parse_args()
    smoke_defaults(parser, args, mode="lite", sample=3)
    cache_dir = use_cache(args)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {', '.join(VARIANTS)}")

    embedded = None
    base_url, model, identity = args.base_url, args.model, None
    if not base_url:
        from pytest_beam.llm import embedded as embedded_model

        reason = embedded_model.unavailable_reason()
        if reason is not None:
            print(f"judge_formats: no --base-url and {reason}", file=sys.stderr)
            return 2
        embedded = embedded_model.EmbeddedModel()
        base_url, model = embedded.start(progress=lambda line: print(line, flush=True))
        identity = embedded_model.CACHE_IDENTITY
    try:
        bench = load_set(args.mode, Path(args.data) if args.data else None)
        cache = ResponseCache(cache_dir / "responses" if args.smoke and cache_dir else Path(args.judge_cache))
        rows, base = [], None
        print(f"{args.mode} set, {len(bench.questions)} questions, sample {args.sample or 'all'}; judge {model}",
              flush=True)
        for name in variants:
            fmt, temperature, seeds = VARIANTS[name]
            meter = Meter()
            clients = [ModelClient(EndpointConfig(base_url=base_url, timeout_s=900, concurrency=1, seed=seed,
                                                  temperature=temperature, identity=identity),
                                   RoleModels(agent=model, judge=model), meter=meter, cache=cache) for seed in seeds]
            started = time.monotonic()
            check = run_judge_check(bench.questions, bench.references, VariantJudge(clients, fmt), profile="default",
                                    judge_runs=len(seeds), sample=args.sample, judge_model=model,
                                    progress=lambda done, total, n=name, t0=started: (
                                        (done % 10 == 0 or done == total)
                                        and print(f"  {n}: {done}/{total} cases, {time.monotonic() - t0:.0f} s",
                                                  flush=True)))
            calls = meter.total().calls
            rows.append(_row(name, check, base, calls))
            base = base or check
            for ability, stats in check.abilities.items():
                k = "-" if stats.kappa is None else f"{stats.kappa:.2f}"
                print(f"    {ability:26s} n={stats.n:3d} agreement={stats.agreement:.2f} kappa={k} "
                      f"false passes {stats.false_passes}/{stats.expected_fail} false fails "
                      f"{stats.false_fails}/{stats.expected_pass}", flush=True)
    finally:
        if embedded is not None:
            embedded.stop()
    headers = ["variant", "cases", "agreement", "false passes", "false fails", "kappa", "kappa 95%",
               f"kappa vs {variants[0]}", "live calls", "seconds"]
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

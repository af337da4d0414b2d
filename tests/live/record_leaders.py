"""Record the leaders' lite cassette: graphrag, hindsight, cognee, lightrag, neo4j-graphrag and langmem
on the lite set, on the embedded model (issue 44).

    BEAM_DATA=../shared/beam python -m tests.live.record_leaders          # all of it, anew
    BEAM_DATA=../shared/beam python -m tests.live.record_leaders --add    # only what the cassette lacks

The README's first command with the six systems selected and no endpoint (the plugin starts the
embedded model), every process of the run (Hindsight's and Cognee's own included) refusing any
connection that leaves the machine (tests/e2e/no_network): every call the libraries make reaches the
model through the relay, so the cassette holds them beside the built-in system's and the judge's.
Writes fixtures/cassettes/lite-leaders-qwen.jsonl and lite-leaders-qwen.scores.json: each system's
answers, item scores and evidence recall, its usage by meter row and what the relay received, which
tests/e2e/test_replay_leaders.py must reproduce offline. Needs the test extra and
`pytest-beam install-system hindsight cognee`; the judge check is off (the lite cassette's run
measures it).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from tests.live.first_command import embedded_env, readme_command
from tests.live.record_peers import recorded_scores

REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "fixtures" / "cassettes" / "lite-leaders-qwen.jsonl"
SCORES = REPO / "fixtures" / "cassettes" / "lite-leaders-qwen.scores.json"
SYSTEMS = ["graphrag", "hindsight", "cognee", "lightrag", "neo4j-graphrag", "langmem"]
NO_NETWORK = REPO / "tests" / "e2e" / "no_network"
# The outside systems' calls are not in the dry run's estimate: the default cap (40 calls) is too low.
LEADERS = [f"--beam-system={','.join(SYSTEMS)}", "--beam-neo4j=local", "--beam-judge-check=off",
           "--beam-max-calls=1500", "--beam-max-tokens=6000000", "--beam-snapshot=off"]
USAGE_KEYS = ("calls", "cached_calls", "replayed_calls", "errors", "prompt_tokens", "completion_tokens")


def recorded_usage(record: dict) -> dict:
    """Per system and meter row, the calls and their tokens, live, cached and replayed together (a
    replayed call's tokens are its recorded usage, `cached_tokens`), so a replay gives the same."""
    out: dict[str, dict] = {}
    for system, rows in record["usage_by_system"].items():
        out[system] = {}
        for row, usage in rows.items():
            out[system][row] = {
                "calls": sum(int(usage.get(k, 0)) for k in ("calls", "cached_calls", "replayed_calls", "errors")),
                "tokens": sum(int(usage.get(k, 0)) for k in ("prompt_tokens", "completion_tokens", "cached_tokens"))}
    return out


def main(argv: list[str] | None = None) -> int:
    import sys

    add = "--add" in (sys.argv[1:] if argv is None else argv)  # new_episodes: replay what is there, record the rest
    beam_data = Path(os.environ.get("BEAM_DATA") or REPO.parent / "shared" / "beam")
    out = Path(tempfile.mkdtemp(prefix="beam-record-leaders-"))
    network_log = out / "network.log"
    env = embedded_env(beam_data, BEAM_CHILD_PYTHONPATH=str(NO_NETWORK), BEAM_NETWORK_LOG=str(network_log))
    env["PYTHONPATH"] = os.pathsep.join([str(NO_NETWORK), *filter(None, [env.get("PYTHONPATH")])])
    started = time.monotonic()
    mode = ["--beam-record-mode=new_episodes"] if add else []
    proc = subprocess.run(readme_command(out, CASSETTE, *LEADERS, *mode), cwd=REPO, env=env)
    minutes = round((time.monotonic() - started) / 60, 1)
    if proc.returncode not in (0, 1):  # 1: an answer below the pass score, still recorded
        return proc.returncode
    if network_log.exists():
        print(f"connections that would have left the machine were refused:\n{network_log.read_text()}")
        return 3
    record = json.loads(next((out / "results").glob("*/record.json")).read_text())
    SCORES.write_text(json.dumps({"model": record["models"]["agent"], "minutes": minutes,
                                  "systems": recorded_scores(record), "usage": recorded_usage(record),
                                  "relay": record["relay"]}, indent=2) + "\n")
    print(f"recorded {CASSETTE} and {SCORES} in {minutes} min; the run's folder: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

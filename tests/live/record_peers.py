"""Record the peers' lite cassette: graphrag, mem0 and graphiti on the lite set, embedded model.

    BEAM_DATA=../shared/beam python -m tests.live.record_peers

The README's first command with the three systems selected and no endpoint (the plugin starts
the embedded model): every call the outside systems' libraries make reaches the model through the
relay, so the cassette holds them beside the built-in system's and the judge's. Writes
fixtures/cassettes/lite-peers-qwen.jsonl and lite-peers-qwen.scores.json (each system's answers
and scores, which tests/e2e/test_replay_peers.py must reproduce offline). About 50 minutes on an
idle 2-core machine; the judge check is off (the lite cassette's run already measures it).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from tests.live.first_command import embedded_env, readme_command

REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "fixtures" / "cassettes" / "lite-peers-qwen.jsonl"
SCORES = REPO / "fixtures" / "cassettes" / "lite-peers-qwen.scores.json"
SYSTEMS = "graphrag,mem0,graphiti"
# The outside systems' calls are not in the dry run's estimate: the default cap (40 calls) is too low.
PEERS = [f"--beam-system={SYSTEMS}", "--beam-judge-check=off", "--beam-max-calls=600",
         "--beam-max-tokens=3000000", "--beam-snapshot=off"]


def recorded_scores(record: dict) -> dict:
    """What the replay must give again: per system and question, the answer, its scores and flags."""
    out: dict[str, dict] = {}
    for q in record["questions"]:
        out.setdefault(q["system"], {})[q["id"]] = {
            "answer": q["answer"], "score": q["score"], "items": [i["score"] for i in q["items"]],
            "flags": q["flags"], "evidence_recall": q["evidence_recall"]}
    return out


def main() -> int:
    beam_data = Path(os.environ.get("BEAM_DATA") or REPO.parent / "shared" / "beam")
    out = Path(tempfile.mkdtemp(prefix="beam-record-peers-"))
    proc = subprocess.run(readme_command(out, CASSETTE, *PEERS), cwd=REPO, env=embedded_env(beam_data))
    if proc.returncode not in (0, 1):  # 1: an answer below the pass score, still recorded
        return proc.returncode
    record = json.loads(next((out / "results").glob("*/record.json")).read_text())
    SCORES.write_text(json.dumps({"model": record["models"]["agent"], "systems": recorded_scores(record)},
                                 indent=2) + "\n")
    print(f"recorded {CASSETTE} and {SCORES}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

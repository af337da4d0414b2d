"""Record the lite cassette from the README's first command: the lite set on the embedded model.

    BEAM_DATA=../shared/beam python -m tests.live.record_lite

Runs from the repo's root with no endpoint (the plugin starts the embedded model) and writes
fixtures/cassettes/lite-qwen.jsonl (responses only, keyed by request fingerprint), the answer
snapshots under snapshots/, and fixtures/cassettes/lite-qwen.scores.json (the recorded scores,
which the replay stage must reproduce). The replay stage (tests/e2e/test_replay.py) replays it.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from tests.live.first_command import embedded_env, readme_command

REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "fixtures" / "cassettes" / "lite-qwen.jsonl"
SCORES = REPO / "fixtures" / "cassettes" / "lite-qwen.scores.json"


def main() -> int:
    beam_data = Path(os.environ.get("BEAM_DATA") or REPO.parent / "shared" / "beam")
    out = Path(tempfile.mkdtemp(prefix="beam-record-"))
    proc = subprocess.run(readme_command(out, CASSETTE, "--snapshot-update"), cwd=REPO, env=embedded_env(beam_data))
    if proc.returncode not in (0, 1):  # 1: an answer below the pass score, still recorded
        return proc.returncode
    record = json.loads(next((out / "results").glob("*/record.json")).read_text())
    scores = {q["id"]: {"score": q["score"], "items": [i["score"] for i in q["items"]], "flags": q["flags"]}
              for q in record["questions"]}
    SCORES.write_text(json.dumps({"model": record["models"]["agent"], "scores": scores}, indent=2) + "\n")
    print(f"recorded {CASSETTE} and {SCORES}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

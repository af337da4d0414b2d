"""Record the committed lite cassette: a live lite run against SmolLM2, from the repo's root.

    python -m tests.live.record_lite

Writes fixtures/cassettes/lite-smollm2.jsonl (responses only, keyed by request fingerprint),
the answer snapshots under snapshots/, and fixtures/cassettes/lite-smollm2.scores.json (the
recorded scores, which the replay stage must reproduce).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.live.llama_server import LlamaServer
from tests.live.test_live_lite import LIVE_FLAGS

REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "fixtures" / "cassettes" / "lite-smollm2.jsonl"
SCORES = REPO / "fixtures" / "cassettes" / "lite-smollm2.scores.json"


def main() -> int:
    beam_data = Path(os.environ.get("BEAM_DATA", REPO.parent / "shared" / "beam"))
    results = Path(tempfile.mkdtemp(prefix="beam-record-"))
    with LlamaServer() as server:
        flags = [f for f in LIVE_FLAGS if not f.startswith("--beam-snapshot")]
        cmd = [sys.executable, "-m", "pytest", "-m", "lite", "-p", "no:randomly", "-p", "no:cacheprovider",
               f"--beam-data={beam_data}", f"--beam-base-url={server.base_url}", f"--beam-model={server.model}",
               "--beam-neo4j=local", f"--beam-results={results}", "--beam-record-mode=all",
               f"--beam-cassette={CASSETTE}", "--snapshot-update", *flags]
        proc = subprocess.run(cmd, cwd=REPO)
    if proc.returncode != 0:
        return proc.returncode
    record = json.loads(next(results.glob("*/record.json")).read_text())
    scores = {q["id"]: {"score": q["score"], "items": [i["score"] for i in q["items"]], "flags": q["flags"]}
              for q in record["questions"]}
    SCORES.write_text(json.dumps({"model": record["models"]["agent"], "scores": scores}, indent=2) + "\n")
    print(f"recorded {CASSETTE} and {SCORES}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

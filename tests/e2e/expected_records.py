"""A replayed run's record, as the committed cassette must give it again: equal apart from what
changes from run to run (its id, clock times and durations, the commit and the environment's
paths and lock).

A replay answers every model call from the cassette, so everything else in the record is the
code's doing: its questions, answers, item scores and replies, usage counts, graph sizes,
aggregates, intervals and the judge check. A change of code that means to change none of that
(a redesign, a move, a rename) is held to it by comparing the record with the file committed
here; a change that means to change the record rewrites the file, and its diff shows what it
changed:

    python -m tests.e2e.expected_records RECORD.json fixtures/cassettes/lite-qwen.record.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: Keys whose values differ from run to run whatever the code does.
VOLATILE = frozenset({"run_id", "started", "finished", "commit", "dirty", "lockfile_hash", "seconds"})
#: Relay counts that follow the clock, not the code: Hindsight's retain embeds through a coalescing
#: embedder (hindsight_api/engine/retain/embedding_coalescer.py) that merges whatever callers are
#: pending when it dispatches, so the same texts reach the relay in 5 requests on one run and 6 on
#: another (CI, 2026-12-07). Its chat requests, and every other system's counts, stay compared.
TIMED_RELAY_COUNTS = (("hindsight", "embeddings"),)


def normalized(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its volatile values: those keys dropped wherever they are, the phases
    timed kept by name only, and the paths of this checkout, the BEAM data and the results folder
    written as placeholders."""
    settings = record.get("settings") or {}
    places = {str(REPO): "<repo>"}
    if settings.get("data"):
        places[str(settings["data"])] = "<data>"
    if settings.get("results"):
        places[str(settings["results"])] = "<results>"

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, str):
            for path, placeholder in sorted(places.items(), key=lambda p: -len(p[0])):
                value = value.replace(path, placeholder)
            return value
        return value

    out = clean(record)
    for system, count in TIMED_RELAY_COUNTS:
        (out.get("relay") or {}).get(system, {}).pop(count, None)
    out["phase_seconds"] = sorted(record.get("phase_seconds") or {})
    out["phase_wall_seconds"] = sorted(record.get("phase_wall_seconds") or {})
    return out


def differences(got: Any, want: Any, where: str = "record") -> list[str]:
    """Where two normalized records differ, one line per place (the first 20 are enough to read)."""
    if isinstance(got, dict) and isinstance(want, dict):
        lines = []
        for key in sorted(set(got) | set(want)):
            if key not in got:
                lines.append(f"{where}.{key}: missing (expected {json.dumps(want[key])[:120]})")
            elif key not in want:
                lines.append(f"{where}.{key}: not expected (got {json.dumps(got[key])[:120]})")
            else:
                lines += differences(got[key], want[key], f"{where}.{key}")
        return lines
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [line for n, (g, w) in enumerate(zip(got, want)) for line in differences(g, w, f"{where}[{n}]")]
    return [] if got == want else [f"{where}: got {json.dumps(got)[:160]}, expected {json.dumps(want)[:160]}"]


def check(record: dict[str, Any], expected_file: Path) -> None:
    """Fail naming every place where the record differs from the committed one."""
    want = json.loads(expected_file.read_text(encoding="utf-8"))
    lines = differences(normalized(record), want)
    assert not lines, (f"{len(lines)} differences from {expected_file.name} (rewrite it with "
                       f"python -m tests.e2e.expected_records if the change is meant):\n" + "\n".join(lines[:20]))


def main(argv: list[str]) -> int:
    record, target = Path(argv[0]), Path(argv[1])
    text = json.dumps(normalized(json.loads(record.read_text(encoding="utf-8"))), indent=1, sort_keys=True)
    target.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

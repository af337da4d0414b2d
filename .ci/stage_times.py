"""How long each stage of the README's first command took, read from its timestamped output.

    python3 .ci/stage_times.py STAMPED_OUTPUT

STAMPED_OUTPUT is the command's output through .ci/timestamps.py (seconds since the start, then the
line). The first-time steps print a line as they begin (the model's assembly, Neo4j's jars, the
embedder) and end where the next line begins; the run's own phases come from its summary (wall
time of ingest, agent, judge; the judge check's seconds). A stage with no line did not run here
(a warm cache) and says so. Standard library only: it runs before any project venv exists.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINE = re.compile(r"^\s*(\d+\.\d) (.*)$")
# (stage, the line it begins with, the line it ends with: None = whatever line comes next)
STEPS: list[tuple[str, str, str | None]] = [
    ("model assembly", r"^embedded model: assembling ", r"^embedded model: assembled and verified"),
    ("model server start", r"^embedded model: starting ", r"^embedded model: ready at "),
    ("Neo4j jars", r"^Neo4j: resolving the Neo4j ", None),
    ("embedder", r"^embedder: building ", None),
]
# the summary's wall-time line; "(first start to last end)" since wall and summed time are printed apart
_SPAN = r"([\d.]+ (?:s|min))"
WALL = re.compile(rf"wall time(?: \(first start to last end\))?: ingest {_SPAN}, agent {_SPAN}, judge {_SPAN}")
JUDGE_CHECK = re.compile(r"^judge check: .*\(profile [^,]+, (\d+) s\)")


def seconds(text: str) -> float:
    value, unit = text.split()
    return float(value) * (60 if unit == "min" else 1)


def stages(lines: list[tuple[float, str]]) -> list[tuple[str, float | None]]:
    out: list[tuple[str, float | None]] = []
    pip_done = next((t for t, text in lines if text.startswith("Successfully installed")), None)
    out.append(("install (venv and pip)", pip_done))
    for name, begin, end in STEPS:
        start = next((i for i, (_, text) in enumerate(lines) if re.search(begin, text)), None)
        if start is None:
            out.append((name, None))
            continue
        after = lines[start + 1:]
        stop = next((t for t, text in after if (re.search(end, text) if end else text.strip())), lines[-1][0])
        out.append((name, stop - lines[start][0]))
    wall = next((WALL.search(text) for _, text in lines if WALL.search(text)), None)
    for n, phase in enumerate(("ingest", "agent", "judge"), start=1):
        out.append((phase, seconds(wall.group(n)) if wall else None))
    check = next((JUDGE_CHECK.search(text) for _, text in lines if JUDGE_CHECK.search(text)), None)
    out.append(("judge check", float(check.group(1)) if check else None))
    out.append(("the whole command", lines[-1][0] if lines else None))
    return out


def main(path: Path) -> int:
    lines = [(float(m.group(1)), m.group(2)) for m in map(LINE.match, path.read_text(errors="replace").splitlines())
             if m]
    if not lines:
        print(f"stage times: {path} holds no timestamped line")
        return 1
    print("stage times of the README's first command:")
    for name, took in stages(lines):
        shown = "did not run here (cached, or the command stopped before it)" if took is None else (
            f"{took:7.1f} s" + (f"  ({took / 60:.1f} min)" if took >= 60 else ""))
        print(f"  {name:<24} {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

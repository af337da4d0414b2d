"""Did the README's first command work? Its exit status, its record and its output, judged as
tests/live/test_live_lite.py judges the same command: every lite question scored (passed or
failed, never an error or a skip), the summary and the judge's calibration printed.

    python3 .ci/first_command_check.py STATUS RESULTS_DIR OUTPUT_FILE

Exit 0 when it worked (it prints each question's score and verdict), 1 with the reason otherwise.
Standard library only: it runs before any project venv exists.
"""

import json
import sys
from pathlib import Path

LITE = ("conv17:information_extraction:0", "conv17:multi_session_reasoning:0")


def main(status: int, results: Path, output: Path) -> str | None:
    if status not in (0, 1):
        return f"the README's first command failed (exit {status})"
    text = output.read_text(encoding="utf-8", errors="replace")
    if "pytest-beam summary" not in text:
        return "the README's first command printed no lite summary"
    records = sorted(results.glob("*/record.json"))
    if not records:
        return f"the README's first command wrote no record under {results}"
    record = json.loads(records[-1].read_text(encoding="utf-8"))
    questions = {q["id"]: q for q in record.get("questions", [])}
    if sorted(questions) != sorted(LITE):
        return f"the record holds {sorted(questions)}, not the lite set's two questions"
    for qid, q in questions.items():
        if q.get("outcome") not in ("passed", "failed") or q.get("score") is None:
            return f"{qid} was not scored: outcome {q.get('outcome')}, {q.get('error') or 'no score'}"
        print(f"  {qid}: {q['outcome']}, score {q['score']:.3f}, answer {q.get('answer')!r}")
    below = sum(q["outcome"] == "failed" for q in questions.values())
    if (status == 1) != bool(below):
        return f"exit status {status} does not match the record ({below} question(s) below the pass score)"
    if record.get("judge_check") is None:
        return "the run printed no judge check beside its scores (the embedded model judges: it should)"
    print(f"the README's first command worked: {2 - below} of 2 lite questions at or above the pass score"
          + (f"; {below} below it, the embedded model's score (exit 1), not a failure of the command" if below else ""))
    return None


if __name__ == "__main__":
    problem = main(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
    if problem:
        print(f"{problem}: that is a failure")
        sys.exit(1)

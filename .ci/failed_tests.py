"""The tests a JUnit XML file marks failed or errored, one line each with the first line of why.

    python3 .ci/failed_tests.py JUNIT_XML

.ci/run prints this last, next to the suite's closing line, so that the tail of CI's output (often
all that is kept of a long run) names what failed instead of only counting it. Exit 0 always: the
suite's own status decides the run. Standard library only.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def failed(junit: Path) -> list[str]:
    lines: list[str] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        for kind in ("failure", "error"):
            for problem in case.findall(kind):
                name = f"{case.get('classname', '')}::{case.get('name', '')}"
                why = (problem.get("message") or problem.text or "").strip().splitlines()
                lines.append(f"{kind.upper()} {name}: {why[0][:300] if why else '(no message)'}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    junit = Path(argv[1])
    if not junit.is_file():
        print(f"no JUnit XML at {junit}: the suite did not get far enough to write it")
        return 0
    try:
        problems = failed(junit)
    except ET.ParseError as exc:
        print(f"the JUnit XML at {junit} does not parse ({exc}): the suite's output above says more")
        return 0
    print(f"== {len(problems)} test(s) failed or errored" + (":" if problems else ""))
    for line in problems:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""CI names what failed at the very end of its output (.ci/failed_tests.py), where a kept tail sees it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / ".ci" / "failed_tests.py"

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" tests="3">
<testcase classname="tests.e2e.test_a" name="test_one">
<failure message="assert 5 == 6&#10;+  where 5 = len(x)">long traceback</failure></testcase>
<testcase classname="tests.e2e.test_a" name="test_two"/>
<testcase classname="tests.test_b" name="test_three[xdist]">
<error message="failed on setup with &quot;OSError: no port&quot;">tb</error></testcase>
</testsuite></testsuites>
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_each_failed_or_errored_test_is_named_with_the_first_line_of_why(tmp_path):
    junit = tmp_path / "tests.xml"
    junit.write_text(JUNIT, encoding="utf-8")
    done = run(str(junit))
    assert done.returncode == 0
    assert done.stdout.splitlines() == [
        "== 2 test(s) failed or errored:",
        "FAILURE tests.e2e.test_a::test_one: assert 5 == 6",
        'ERROR tests.test_b::test_three[xdist]: failed on setup with "OSError: no port"',
    ]


def test_a_missing_or_broken_junit_file_is_said_and_never_fails_the_step(tmp_path):
    missing = run(str(tmp_path / "absent.xml"))
    assert (missing.returncode, missing.stdout.startswith("no JUnit XML at ")) == (0, True)
    broken = tmp_path / "broken.xml"
    broken.write_text("<testsuites><testcase", encoding="utf-8")
    said = run(str(broken))
    assert (said.returncode, "does not parse" in said.stdout) == (0, True)

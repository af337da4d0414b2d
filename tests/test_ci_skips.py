"""In CI (CI=true) a skip is a failure, with its reason; on a laptop it stays a skip."""

from __future__ import annotations

import pytest

REPO_CONFTEST = (__import__("pathlib").Path(__file__).resolve().parents[1] / "conftest.py").read_text()


@pytest.fixture
def project(pytester):
    pytester.makeconftest(REPO_CONFTEST)
    pytester.makepyfile(
        test_some="""
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="chromium is not installed")
def test_needs_chromium():
    pass

def test_skips_inside():
    pytest.skip("no live model")

@pytest.mark.xfail(reason="known", strict=False)
def test_expected_to_fail():
    assert False
""",
        test_module_skip="""
import pytest
pytest.skip("Neo4j jars missing", allow_module_level=True)

def test_never():
    pass
""")
    return pytester


def test_in_ci_every_skip_fails_with_its_reason(project, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = project.runpytest("-p", "no:randomly", "-p", "no:xdist")
    # a skip in setup (skipif) fails as an error, one in the test body as a failure; the skipped
    # module is still counted as skipped by pytest, and fails the session
    result.assert_outcomes(passed=1, failed=1, errors=1, skipped=1, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*skipped in CI*chromium is not installed*", "*skipped in CI*no live model*",
                                 "*test_module_skip.py: *Neo4j jars missing*"])


def test_a_skipped_module_alone_fails_the_session_in_ci(project, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = project.runpytest("-p", "no:randomly", "-p", "no:xdist", "test_module_skip.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_outside_ci_a_skip_stays_a_skip(project, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = project.runpytest("-p", "no:randomly", "-p", "no:xdist")
    result.assert_outcomes(passed=1, skipped=3, xfailed=1)
    assert result.ret == pytest.ExitCode.OK

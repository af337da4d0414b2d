"""Summary tables and the ``pytest-beam report`` command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_beam.cli import main
from pytest_beam.results.record_files import write_record
from pytest_beam.results.summary import JUDGE_IS_AGENT_WARNING, render_comparison, render_summary
from tests.results.factory import run_record

REPO = Path(__file__).resolve().parents[2]
A_ID = "20250101T000000Z-aaaa"
B_ID = "20250102T000000Z-bbbb"


def record_b(**kw):
    # B differs from A in one answer (and so its score): conv1:information_extraction:0 1.0 -> 0.0
    return run_record(B_ID, answer_ie0="The dog is called Rex.", score_ie0=0.0,
                      started="2025-01-02T00:00:00+00:00", **kw)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    res = tmp_path / "results"
    write_record(res / A_ID, run_record(A_ID), [])
    write_record(res / B_ID, record_b(), [])
    return res


def row(lines: list[str], first: str, min_cells: int = 1) -> list[str]:
    found = [line.split() for line in lines if line.split()[:1] == [first] and len(line.split()) >= min_cells]
    assert found, f"no row {first!r} in:\n" + "\n".join(lines)
    return found[0]


def test_summary_rows_and_sections():
    r = run_record()
    lines = render_summary(r)
    assert row(lines, "information_extraction")[:6] == [
        "information_extraction", "2", "0.750", "[0.750,", "0.750]", "1.000"]
    assert row(lines, "event_ordering")[:6] == ["event_ordering", "1", "0.500", "[0.500,", "0.500]", "0.500"]
    assert row(lines, "overall")[:6] == ["overall", "3", "0.667", "[0.667,", "0.667]", "0.750"]
    text = "\n".join(lines)
    assert "known_bad_rubric=1" in text and "parse_error=1" in text
    assert f"WARNING: {JUDGE_IS_AGENT_WARNING}" in text
    assert row(lines, "judge", 7)[:7] == ["judge", "7", "3", "0", "4,200", "280", "4.2"]
    assert row(lines, "total")[:6] == ["total", "33", "5", "0", "52,400", "4,590"]
    assert "agent calls per question: mean 3.0, max 4" in text
    # 1,800 prompt tokens per agent call, 3 / 2 / 4 calls: what the agent put in front of its model
    assert "agent prompt tokens per question: mean 5,400, p95 7,200 (3 questions, live calls)" in text
    assert row(lines, "conv1")[:5] == ["conv1", "7", "5", "6", "1"]
    assert "partial run" not in text


def test_summary_partial_snapshot_changes_and_separate_judge():
    r = run_record(judge_model="gpt-4.1-mini").model_copy(
        update={"partial": True, "partial_reason": "spend cap reached", "snapshot_changes": ["conv1:event_ordering:0"]})
    text = "\n".join(render_summary(r))
    assert JUDGE_IS_AGENT_WARNING not in text
    assert "WARNING: partial run: spend cap reached" in text
    assert "answers changed from their snapshots (1):\n  conv1:event_ordering:0" in text


def test_comparison_deltas_and_warnings():
    lines = render_comparison(run_record(A_ID), record_b())
    # one conversation: every resample is the sample itself, so each interval is the delta
    assert row(lines, "information_extraction") == [
        "information_extraction", "2", "0.750", "2", "0.250", "-0.500", "[-0.500,", "-0.500]", "*", "-1.000"]
    assert row(lines, "event_ordering") == [
        "event_ordering", "1", "0.500", "1", "0.500", "+0.000", "[+0.000,", "+0.000]", "+0.000"]
    assert row(lines, "overall") == [
        "overall", "3", "0.667", "3", "0.333", "-0.333", "[-0.333,", "-0.333]", "*", "-0.500"]
    changed = row(lines, "conv1:information_extraction:0")
    assert changed[:4] == ["conv1:information_extraction:0", "1.000", "0.000", "-1.000"]
    assert "answer" in " ".join(changed)
    assert not any("different models" in line for line in lines)

    other = render_comparison(run_record(A_ID), record_b(agent_model="llama-3.1-8b", scorer="upstream"))
    text = "\n".join(other)
    assert "WARNING: the records used different models" in text and "agent: qwen2.5-7b -> llama-3.1-8b" in text
    assert "WARNING: the records used different scorers (default -> upstream)" in text


def test_report_latest(results, capsys):
    assert main(["report", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert B_ID in out
    assert row(out.splitlines(), "information_extraction")[:6] == [
        "information_extraction", "2", "0.250", "[0.250,", "0.250]", "0.000"]
    assert row(out.splitlines(), "overall")[:3] == ["overall", "3", "0.333"]


def test_report_one_record_by_path_or_id(results, capsys):
    assert main(["report", str(results / A_ID / "record.json")]) == 0
    assert row(capsys.readouterr().out.splitlines(), "overall")[:3] == ["overall", "3", "0.667"]
    assert main(["report", "--results", str(results), A_ID]) == 0
    assert f"run {A_ID}" in capsys.readouterr().out


def test_report_two_records_shows_deltas(results, capsys):
    assert main(["report", str(results / A_ID), str(results / B_ID)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert row(lines, "information_extraction")[5::4] == ["-0.500", "-1.000"]
    assert row(lines, "event_ordering")[5::3] == ["+0.000", "+0.000"]
    assert row(lines, "overall")[5::4] == ["-0.333", "-0.500"]
    assert any(line.strip().startswith("conv1:information_extraction:0") and "-1.000" in line for line in lines)
    assert not any(line.strip().startswith("conv1:event_ordering:0") for line in lines)


def test_report_all_lists_records(results, capsys):
    assert main(["report", "--all", "--results", str(results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    a = row(lines, A_ID)
    b = row(lines, B_ID)
    assert a[1:3] == ["2025-01-01T00:00:00", "lite"] and a[-2:] == ["0.667", "3"]
    assert b[-2:] == ["0.333", "3"]
    assert lines.index(next(line for line in lines if line.startswith(A_ID))) < lines.index(
        next(line for line in lines if line.startswith(B_ID)))


@pytest.mark.parametrize("args", [["report", "{missing}"], ["report", "--results", "{missing}"],
                                  ["report", "--all", "--results", "{missing}"], ["report", "{results}", "{missing}"]])
def test_missing_record_exits_2_naming_the_path(results, tmp_path, capsys, args):
    missing = tmp_path / "no" / "such-run"
    argv = [a.format(missing=missing, results=results / A_ID) for a in args]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert str(missing) in captured.err
    assert captured.out == ""


def test_report_html_one_and_two(results, tmp_path, capsys):
    out1 = tmp_path / "one.html"
    assert main(["report", "--results", str(results), "--html", str(out1)]) == 0
    page = out1.read_text()
    assert B_ID in page and 'id="ability-chart"' in page
    out2 = tmp_path / "two.html"
    assert main(["report", "--html", str(out2), str(results / A_ID), str(results / B_ID)]) == 0
    page2 = out2.read_text()
    assert f"Compared with {A_ID}" in page2
    assert re.search(r'data-ability="information_extraction">.*?data-delta="-0.5">-0.500<', page2)
    assert f"wrote {out2}" in capsys.readouterr().out


def test_no_command_and_too_many_records(capsys):
    assert main([]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["report", "a", "b", "c"])
    assert exc.value.code == 2


def test_python_dash_m_and_console_script(results):
    proc = subprocess.run([sys.executable, "-m", "pytest_beam", "report", "--results", str(results)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "information_extraction" in proc.stdout
    missing = results / "nope"
    proc = subprocess.run([sys.executable, "-m", "pytest_beam", "report", str(missing)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and str(missing) in proc.stderr
    script = Path(sys.executable).parent / "pytest-beam"
    if script.exists():
        proc = subprocess.run([str(script), "report", "--all", "--results", str(results)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and A_ID in proc.stdout


@pytest.mark.parametrize("command", ["report", "rejudge", "judge-check"])
def test_each_command_help_reads_as_written(command, capsys):
    # a description is printed as given (argparse formats only the options' help with %), so a
    # doubled percent sign there reached the user as "95%%"
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "%%" not in text, text
    if command != "rejudge":
        assert re.search(r"95%\s", text), text

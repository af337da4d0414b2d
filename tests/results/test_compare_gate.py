"""``report A B``: paired intervals of the deltas, refusal across profiles, and ``--fail-on-drop``
(issue 17 points 2, 3 and 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_beam.cli import main
from pytest_beam.results.compare import compare, drops_beyond
from pytest_beam.results.comparison_text import render_comparison
from pytest_beam.results.intervals import paired_bootstrap
from pytest_beam.results.record_files import write_record
from tests.results.factory import spread_record

CONVS = range(1, 11)


def scores(tr: float, ab: float) -> dict[str, float]:
    """Ten conversations, two abilities, two questions each."""
    out = {}
    for c in CONVS:
        for i in range(2):
            out[f"conv{c}:temporal_reasoning:{i}"] = tr
            out[f"conv{c}:abstention:{i}"] = ab
    return out


BASE = scores(tr=0.5, ab=1.0)
# temporal_reasoning drops by 0.5 on every question; abstention stays
DROPPED = scores(tr=0.0, ab=1.0)


def write(tmp_path: Path, name: str, record) -> Path:
    write_record(tmp_path / name, record, [])
    return tmp_path / name


def row(lines: list[str], first: str) -> list[str]:
    return next(line.split() for line in lines if line.split()[:1] == [first])


def test_each_delta_has_the_paired_interval_of_the_shared_questions():
    a, b = spread_record("A", BASE), spread_record("B", DROPPED)
    cmp = compare(a, b)
    rows = {r.ability: r for r in cmp.rows}
    tr_a = {k: v for k, v in BASE.items() if "temporal" in k}
    tr_b = {k: v for k, v in DROPPED.items() if "temporal" in k}
    assert rows["temporal_reasoning"].paired == paired_bootstrap(tr_a, tr_b)
    assert rows["temporal_reasoning"].delta == -0.5
    assert (rows["temporal_reasoning"].paired.low, rows["temporal_reasoning"].paired.high) == (-0.5, -0.5)
    assert rows["temporal_reasoning"].paired.distinguishable
    assert not rows["abstention"].paired.distinguishable  # every delta 0: interval [0, 0]
    assert rows["overall"].paired == paired_bootstrap(BASE, DROPPED)
    lines = render_comparison(a, b)
    assert row(lines, "temporal_reasoning")[5:9] == ["-0.500", "[-0.500,", "-0.500]", "*"]
    assert row(lines, "abstention")[5:8] == ["+0.000", "[+0.000,", "+0.000]"]
    assert "*" not in row(lines, "abstention")


def test_only_shared_questions_are_paired():
    a = spread_record("A", BASE)
    b_scores = {k: v for k, v in DROPPED.items() if not k.startswith("conv10:")}
    b_scores["conv11:abstention:0"] = 1.0
    p = next(r for r in compare(a, spread_record("B", b_scores)).rows if r.ability == "overall").paired
    assert (p.questions, p.only_in_a, p.only_in_b) == (36, 4, 1)
    assert p == paired_bootstrap(BASE, b_scores)


def test_different_profiles_show_no_deltas_unless_forced(tmp_path, capsys):
    a = write(tmp_path, "A", spread_record("A", BASE, scorer="default"))
    b = write(tmp_path, "B", spread_record("B", DROPPED, scorer="upstream"))
    assert main(["report", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "no deltas shown: the records were scored under different profiles (default -> upstream)" in out
    assert "-0.500" not in out and "95% interval of delta" not in out
    assert row(out.splitlines(), "temporal_reasoning") == ["temporal_reasoning", "20", "0.500", "20", "0.000"]

    assert main(["report", "--force", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the records were scored under different profiles (default -> upstream); deltas shown" in out
    assert row(out.splitlines(), "temporal_reasoning")[5] == "-0.500"


def test_changed_prompt_texts_also_refuse_deltas():
    a, b = spread_record("A", BASE), spread_record("B", DROPPED)
    changed = b.scoring.model_copy(update={"prompt_sha256": {**b.scoring.prompt_sha256, "judge": "0" * 64}})
    b = b.model_copy(update={"scoring": changed})
    assert compare(a, b).profile_mismatch == "the records' judge prompts differ (judge)"
    assert any(line.startswith("no deltas shown") for line in render_comparison(a, b))


def test_fail_on_drop_exits_1_when_one_ability_drops_beyond_its_interval(tmp_path, capsys):
    a = write(tmp_path, "A", spread_record("A", BASE))
    b = write(tmp_path, "B", spread_record("B", DROPPED))
    assert main(["report", str(a), str(b), "--fail-on-drop", "0.02"]) == 1
    out = capsys.readouterr().out
    assert "DROP: temporal_reasoning fell -0.500" in out
    assert "DROP: overall fell -0.250" in out
    assert "DROP: abstention" not in out
    assert "2 drop(s) beyond the interval; exit status 1" in out


def test_fail_on_drop_exits_0_when_nothing_drops(tmp_path, capsys):
    a = write(tmp_path, "A", spread_record("A", BASE))
    same = write(tmp_path, "same", spread_record("same", BASE))
    better = write(tmp_path, "better", spread_record("better", scores(tr=1.0, ab=1.0)))
    assert main(["report", str(a), str(same), "--fail-on-drop", "0.02"]) == 0
    assert main(["report", str(a), str(better), "--fail-on-drop", "0.02"]) == 0
    assert "no ability and not the overall mean dropped beyond its interval" in capsys.readouterr().out


def test_a_drop_inside_its_interval_or_the_threshold_passes_the_gate():
    # three conversations, one drops by 0.5: the mean drops 1/6, but a resample draws none of the
    # dropping conversation with chance (2/3)^3 > 2.5%, so the interval reaches 0: not beyond it
    a_scores = {f"conv{c}:temporal_reasoning:0": 1.0 for c in (1, 2, 3)}
    b_scores = {**a_scores, "conv1:temporal_reasoning:0": 0.5}
    cmp = compare(spread_record("A", a_scores), spread_record("B", b_scores))
    tr = next(r for r in cmp.rows if r.ability == "temporal_reasoning")
    assert tr.delta == round(-0.5 / 3, 6) and tr.paired.high == 0.0 and tr.paired.low == -0.5
    assert drops_beyond(cmp, 0.02) == []
    # a uniform drop of 0.5 is beyond the interval at 0.02 but not at a 0.5 threshold
    steady = compare(spread_record("A", BASE), spread_record("B", DROPPED))
    assert [r.ability for r in drops_beyond(steady, 0.02)] == ["temporal_reasoning", "overall"]
    assert drops_beyond(steady, 0.5) == []


def test_fail_on_drop_needs_two_records_and_the_same_profile(tmp_path, capsys):
    a = write(tmp_path, "A", spread_record("A", BASE))
    up = write(tmp_path, "up", spread_record("up", DROPPED, scorer="upstream"))
    assert main(["report", str(a), "--fail-on-drop", "0.02"]) == 2
    assert "give two records" in capsys.readouterr().err
    assert main(["report", str(a), str(up), "--fail-on-drop", "0.02"]) == 2
    assert "no gate on scores of different scales" in capsys.readouterr().err
    assert main(["report", str(a), str(up), "--fail-on-drop", "0.02", "--force"]) == 1


@pytest.mark.parametrize("threshold", ["-0.1"])
def test_a_negative_threshold_is_refused(tmp_path, capsys, threshold):
    a = write(tmp_path, "A", spread_record("A", BASE))
    assert main(["report", str(a), str(a), "--fail-on-drop", threshold]) == 2

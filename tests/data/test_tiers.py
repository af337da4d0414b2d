"""All four BEAM tiers (issue 26 points 1 and 2): --beam-tier, the sets per tier, the 1M tier's
missing chats, and the sources' word on what they can serve."""

from __future__ import annotations

import re
import shutil
from collections import Counter

import pytest

from pytest_beam.data.data_error import BeamDataError
from pytest_beam.data.records import ABILITIES
from pytest_beam.data.sets import load_set
from pytest_beam.setting_sources import resolve
from pytest_beam.settings import SettingsError

ONE_M_PRESENT = ["3", "4", "6", "7", "8", "9", "10", "31", "32"]


def collect(pytester, *args):
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:randomly", *args)
    ids = [line.strip() for line in result.outlines if line.startswith("beam::")]
    return result, ids


def _resolve(flags=None, environ=None, ini=None):
    flags, ini = flags or {}, ini or {}
    return resolve(flags.get, ini.get, environ or {})


def test_500K_complete_collects_700_items_70_per_ability(pytester, beam_data_dir):
    """The issue's first 'done when': 700 items, 70 per ability, every id carrying its tier."""
    result, ids = collect(pytester, "--beam-tier=500K", "--beam-mode=complete", f"--beam-data={beam_data_dir}")
    assert result.ret == 0, result.outlines[-5:]
    assert len(ids) == 700 and len(set(ids)) == 700
    questions = [re.fullmatch(r"beam::test_question\[500K/conv(\d+):([a-z_]+):([01])\]", i) for i in ids]
    assert all(questions), [i for i, q in zip(ids, questions) if not q][:3]
    assert Counter(q.group(2) for q in questions) == {a: 70 for a in ABILITIES}
    assert Counter(q.group(1) for q in questions) == {str(n): 20 for n in range(1, 36)}
    assert "700 tests collected" in result.outlines[-1]


def test_1M_complete_lists_what_is_present_and_names_what_is_missing(pytester, beam_data_dir):
    """The second 'done when': the questions of the nine conversations whose chats are here, and one
    line naming the 26 others and how to get them (a clone, checked by blob id)."""
    result, ids = collect(pytester, "--beam-tier=1M", "--beam-mode=complete", f"--beam-data={beam_data_dir}")
    assert result.ret == 0
    assert len(ids) == 180
    assert sorted({re.search(r"1M/conv(\d+):", i).group(1) for i in ids}, key=int) == ONE_M_PRESENT
    notes = [line for line in result.outlines if "left out" in line]
    assert len(notes) == 1, result.outlines[:5]
    note = notes[0]
    assert "26 of 35 conversations have no chat" in note and "(1, 2, 5, 11-30, 33-35)" in note
    assert "520 questions are left out" in note
    assert "git clone https://github.com/mohammadtavakoli78/BEAM" in note and "b2a3ee8ba12d" in note
    assert "git blob id" in note and "--beam-data=" in note


def test_the_record_of_a_partial_tier_says_what_was_left_out(beam_data_dir, tmp_path):
    """The set knows its missing conversations; the record and the summary carry them (a partial
    set is never presented as the whole tier)."""
    from pytest_beam.results.schema import RunRecord
    from pytest_beam.results.summary import render_summary

    bench = load_set("complete", beam_data_dir, tier="1M")
    assert bench.tier == "1M" and len(bench.questions) == 180
    assert len(bench.missing) == 26 and "1" in bench.missing and "3" not in bench.missing
    record = RunRecord(run_id="r", mode="complete", tier="1M", missing_conversations=list(bench.missing))
    lines = render_summary(record)
    assert any("tier 1M" in line for line in lines)
    assert any(line.startswith("left out: 26 conversations") for line in lines)


@pytest.mark.parametrize(("tier", "full"), [("100K", ["1", "4", "6", "13", "17"]),
                                           ("500K", ["2", "9", "11", "19", "28"]),
                                           ("1M", ["3", "4", "8", "9", "31"])])
def test_the_full_set_of_each_tier_is_five_conversations_ten_per_ability(beam_data_dir, tier, full):
    bench = load_set("full", beam_data_dir, tier=tier)
    assert list(bench.documents) == full and bench.missing == ()
    assert len(bench.questions) == 100
    assert Counter(q.ability for q in bench.questions) == {a: 10 for a in ABILITIES}
    assert {q.tier for q in bench.questions} == {tier}


def test_conversations_are_checked_against_the_tier():
    assert _resolve({"tier": "500K", "mode": "full", "conversations": "35,2"}).conversations == "2,35"
    with pytest.raises(SettingsError, match=r"--beam-conversations='35'.*the 100K split has conversations 1 to 20"):
        _resolve({"conversations": "35"})
    with pytest.raises(SettingsError, match=r"BEAM_CONVERSATIONS='11'.*the 10M split has conversations 1 to 10"):
        _resolve({"tier": "10M", "mode": "full"}, environ={"BEAM_CONVERSATIONS": "11"})
    with pytest.raises(SettingsError, match=r"--beam-conversations='36'.*the 1M split has conversations 1 to 35"):
        _resolve({"tier": "1M", "mode": "complete", "conversations": "36"})


def test_tier_by_flag_environment_and_ini_and_lite_is_100Ks():
    assert _resolve().tier == "100K"
    assert _resolve({"tier": "1M", "mode": "full"}).tier == "1M"
    assert _resolve({"mode": "full"}, environ={"BEAM_TIER": "500K"}).tier == "500K"
    assert _resolve({"mode": "full"}, ini={"tier": "10M"}).tier == "10M"
    with pytest.raises(SettingsError, match=r"--beam-tier='2M'.*choose one of 100K, 500K, 1M, 10M"):
        _resolve({"tier": "2M"})
    with pytest.raises(SettingsError, match=r"BEAM_TIER=500K: the lite set is 100K's.*--beam-mode=full"):
        _resolve(environ={"BEAM_TIER": "500K"})


def test_a_subset_naming_a_missing_chat_is_an_error(beam_data_dir):
    with pytest.raises(BeamDataError, match=r"names 1M conversations whose chats are not in .*\(1, 5\).*git clone"):
        load_set("complete", beam_data_dir, "1,3,5", tier="1M")


def test_the_10M_tier_here_says_what_to_do(pytester, beam_data_dir):
    result = pytester.runpytest("--collect-only", "-q", "--beam-tier=10M", "--beam-mode=complete",
                                f"--beam-data={beam_data_dir}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.outlines + result.errlines if line.strip()]
    assert len(lines) == 1, lines
    assert "no conversation of the 10M complete set has its chat" in lines[0]
    assert "git clone https://github.com/mohammadtavakoli78/BEAM" in lines[0]


@pytest.mark.parametrize("tier", ["500K", "1M", "10M"])
def test_hugging_face_says_what_it_can_and_cannot_serve(tier):
    """No --beam-data: the Hugging Face source is pinned for 100K only; for the others it says so
    and points to the upstream layout, before any download."""
    with pytest.raises(BeamDataError) as err:
        load_set("full", None, tier=tier)
    message = str(err.value)
    assert "serves the 100K tier only" in message and "3205395e897e" in message
    assert f"chats/{tier}/<n>/chat.json" in message and "--beam-data=DIR" in message
    assert "git clone https://github.com/mohammadtavakoli78/BEAM" in message
    if tier == "10M":
        assert "Mohammadta/BEAM-10M" in message and "plan-<k>" in message


def test_a_blob_pinned_file_that_differs_stops_the_run_naming_it(pytester, beam_data_dir, tmp_path):
    """A clone of the upstream repository as data dir: 1M conversation 1's chat is not in the offline
    copy, so it is pinned by its git blob id alone; a file that differs stops the run, named."""
    from pytest_beam.data import pins
    from pytest_beam.data.local_copy import git_blob_sha1

    clone = tmp_path / "BEAM"
    questions = "chats/1M/1/probing_questions/probing_questions.json"
    (clone / questions).parent.mkdir(parents=True)
    shutil.copyfile(beam_data_dir / questions, clone / questions)
    chat = clone / "chats/1M/1/chat.json"
    chat.write_text("[]", encoding="utf-8")
    pin = pins.UPSTREAM_FILES["chats/1M/1/chat.json"]
    assert pin.sha256 is None
    result = pytester.runpytest("--collect-only", "-q", "--beam-tier=1M", "--beam-mode=complete",
                                "--beam-conversations=1", f"--beam-data={clone}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.outlines + result.errlines if line.strip()]
    assert len(lines) == 1, lines
    assert str(chat) in lines[0] and pin.git_blob_sha1 in lines[0] and git_blob_sha1(chat) in lines[0]


def test_a_sha256_pinned_file_of_a_larger_tier_that_differs_stops_the_run(beam_data_dir, tmp_path):
    copy = tmp_path / "beam"
    rel = "chats/500K/11/chat.json"
    shutil.copytree(beam_data_dir / "chats/500K/11", copy / "chats/500K/11")
    target = copy / rel
    target.chmod(0o644)
    data = bytearray(target.read_bytes())
    data[len(data) // 3] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises(BeamDataError) as err:
        load_set("full", copy, "11", tier="500K")
    assert str(target) in str(err.value) and "sha256 mismatch" in str(err.value)


def test_the_dry_run_names_the_tier_and_its_conversations(pytester, beam_data_dir):
    """Issue 26 point 5: the estimate for a larger tier, from its real chunks (no model, no Neo4j)."""
    result = pytester.runpytest("--beam-dry-run", "--beam-tier=500K", "--beam-mode=full",
                                f"--beam-data={beam_data_dir}")
    text = "\n".join(result.outlines)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED or result.ret == 0, text[-500:]
    head = next(line for line in result.outlines if line.startswith("pytest-beam dry run"))
    assert "full set of 500K, 100 questions, 2832 chunks" in head
    assert "500K/conv2: 582" in head and "500K/conv28: 497" in head
    total = next(line for line in result.outlines if line.startswith("total"))
    # 2,832 extraction + resolution, agent and judge calls, and the judge check's 24 cases
    # (on by default when the judge is the embedded model)
    assert total.split()[1] == "4,918"
    assert any(line.startswith("judge check") and line.split()[2] == "24" for line in result.outlines), text[-800:]


@pytest.mark.parametrize(("numbers", "said"), [
    (["1", "2", "5", "11", "12", "13"], "1, 2, 5, 11-13"),
    (["9", "7", "8", "20"], "7-9, 20"),
    (["4", "5"], "4, 5"),
    (["3"], "3"),
    ([], ""),
])
def test_conversation_numbers_are_said_as_short_ranges(numbers, said):
    from pytest_beam.data.tiers import ranges

    assert ranges(numbers) == said

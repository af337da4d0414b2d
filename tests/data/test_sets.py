"""The complete split, conversation subsets, and the known-bad flags of every conversation."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from pytest_beam.data.data_error import BeamDataError
from pytest_beam.data.local_copy import load_local
from pytest_beam.data.markers import strip_document
from pytest_beam.data.records import ABILITIES
from pytest_beam.data.sets import (
    FULL_CONVERSATIONS,
    known_bad_rubrics,
    load_set,
    parse_conversations,
    session_documents,
)
from pytest_beam.setting_sources import resolve
from pytest_beam.settings import SettingsError


@pytest.fixture(scope="module")
def complete(beam_data_dir):
    return load_set("complete", beam_data_dir)


def test_complete_is_400_questions_40_per_ability(complete):
    assert len(complete.questions) == 400
    assert len({q.id for q in complete.questions}) == 400
    assert Counter(q.ability for q in complete.questions) == {a: 40 for a in ABILITIES}
    assert sorted(complete.documents, key=int) == [str(n) for n in range(1, 21)]
    assert Counter(q.conversation_id for q in complete.questions) == {str(n): 20 for n in range(1, 21)}


def test_complete_documents_are_whole_sessions_as_full_builds_them(complete, beam_data_dir):
    # Conversations 1-5 have 3 sessions, 6-20 have 5 (BEAM's README).
    assert [len(complete.documents[str(n)]) for n in range(1, 21)] == [3] * 5 + [5] * 15
    full = load_set("full", beam_data_dir)
    for cid in FULL_CONVERSATIONS:
        assert complete.documents[cid] == full.documents[cid]
    conv9 = load_local(beam_data_dir, ["9"], {}).conversations["9"]
    assert complete.documents["9"] == tuple(strip_document(d) for d in session_documents(conv9))  # markers stripped
    every_message = [m.id for d in complete.documents["9"] for m in d.messages]
    assert every_message == list(range(len(every_message)))


def test_every_known_bad_flag_lands_on_its_question(complete):
    known = known_bad_rubrics()
    known = {qid: reason for qid, reason in known.items() if "/" not in qid}  # 100K's ids are bare
    flagged = {q.id: q.known_bad_rubric for q in complete.questions if q.known_bad_rubric}
    assert flagged == known
    ids = {q.id for q in complete.questions}
    assert set(known) <= ids
    assert all(reason.strip() for reason in known.values())


def test_known_bad_ids_are_well_formed():
    from pytest_beam.data.ids import parse_question_id
    from pytest_beam.data.tiers import tier

    for qid in known_bad_rubrics():
        question = parse_question_id(qid)
        assert question is not None and question.conversation in tier(question.tier).conversations, qid
        assert question.ability in ABILITIES and question.index in {0, 1}, qid


def test_subset_selects_only_those_conversations(beam_data_dir):
    bench = load_set("complete", beam_data_dir, "17,1,4")
    assert list(bench.documents) == ["1", "4", "17"]
    assert len(bench.questions) == 60
    assert {q.conversation_id for q in bench.questions} == {"1", "4", "17"}
    same = load_set("full", beam_data_dir, ("1", "4", "17"))
    assert same.documents == bench.documents and same.questions == bench.questions


def test_full_and_lite_are_unchanged(beam_data_dir):
    full = load_set("full", beam_data_dir)
    assert list(full.documents) == list(FULL_CONVERSATIONS) and len(full.questions) == 100
    lite = load_set("lite", beam_data_dir)
    assert [q.id for q in lite.questions] == ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("99", "conversation 99 .*does not exist.*1 to 20"),
        ("0", "conversation 0 .*does not exist"),
        ("a", "conversation 'a' .*is not a number"),
        ("1,,4", "empty entry"),
        ("4,4", "conversation 4 is listed twice"),
        ("1.5", "'1.5' .*is not a number"),
    ],
)
def test_bad_subset_names_the_problem(text, message):
    with pytest.raises(BeamDataError, match=message):
        parse_conversations(text)


def test_subset_parsing_normalises():
    assert parse_conversations(" 17, 4,1 ") == ("1", "4", "17")
    assert parse_conversations("") is None and parse_conversations(None) is None


def test_lite_refuses_a_subset(beam_data_dir):
    with pytest.raises(BeamDataError, match="not to lite"):
        load_set("lite", beam_data_dir, "17")


def _resolve(flags=None, environ=None, ini=None):
    flags, ini = flags or {}, ini or {}
    return resolve(flags.get, ini.get, environ or {})


def test_settings_accept_complete_and_a_subset_by_flag_env_and_ini():
    assert _resolve({"mode": "complete"}).mode == "complete"
    assert _resolve({"conversations": "17,1,4"}).conversations == "1,4,17"
    assert _resolve(environ={"BEAM_CONVERSATIONS": "2"}).conversations == "2"
    assert _resolve(ini={"conversations": "3,5"}).conversations == "3,5"
    assert _resolve().conversations is None
    assert _resolve({"scorer": "omnimemeval"}).scorer == "omnimemeval"


def test_an_empty_data_flag_or_variable_means_unset(tmp_path):
    """`--beam-data=` or `BEAM_DATA=` leaves the data unset (Hugging Face), whatever the ini says;
    it used to be taken for the rootdir (flag) or ignored for the ini's path (variable)."""
    ini = {"data": str(tmp_path)}
    assert _resolve(ini=ini).data == tmp_path
    assert _resolve({"data": ""}, ini=ini).data is None
    assert _resolve(environ={"BEAM_DATA": ""}, ini=ini).data is None
    assert _resolve(environ={"BEAM_DATA": "  "}, ini=ini).data is None
    assert _resolve({"data": str(tmp_path)}, environ={"BEAM_DATA": ""}).data == tmp_path


def test_a_replayed_cassettes_settings_win_over_env_and_ini_but_not_flags():
    """Issue 16 point 5: replay takes the recording's settings unless a flag gives one."""
    recorded = {"model": "smollm2", "tool_mode": "json", "agent_steps": 4, "pass_score": 0.0, "judge_model": None}
    got = resolve({"agent_steps": "6"}.get, {"model": "from-ini", "judge_model": "ini-judge"}.get,
                  {"BEAM_TOOL_MODE": "native", "BEAM_PASS_SCORE": "0.7"}, recorded=recorded)
    assert (got.model, got.tool_mode, got.agent_steps, got.pass_score, got.judge_model) == (
        "smollm2", "json", 6, 0.0, None)
    assert _resolve().agent_steps == 12  # nothing recorded: the default as before


def test_settings_reject_a_bad_subset_naming_the_flag():
    with pytest.raises(SettingsError, match=r"--beam-conversations='99'.*does not exist"):
        _resolve({"conversations": "99"})
    with pytest.raises(SettingsError, match=r"BEAM_CONVERSATIONS='a'.*not a number"):
        _resolve(environ={"BEAM_CONVERSATIONS": "a"})


REVIEWED = ("2", "3", "5", "7", "8", "9", "10", "11", "12", "14", "15", "16", "18", "19", "20")


def test_flags_from_the_review_of_the_fifteen_conversations(complete):
    by_id = {q.id: q for q in complete.questions}
    for qid in ("conv9:knowledge_update:1", "conv14:summarization:1", "conv15:multi_session_reasoning:0",
                "conv11:event_ordering:1", "conv2:abstention:0"):
        assert by_id[qid].known_bad_rubric, qid
    reviewed = [qid for qid in known_bad_rubrics() if qid.split(":")[0][4:] in REVIEWED]
    assert len(reviewed) == 24
    # Every reason points into the chat: it names the message ids it rests on.
    assert all(re.search(r"message[s]? \d+", known_bad_rubrics()[qid]) for qid in reviewed)
    # Questions whose rubric holds stay unflagged, e.g. a correct duration and a correct update.
    assert by_id["conv7:temporal_reasoning:1"].known_bad_rubric is None
    assert by_id["conv16:knowledge_update:1"].known_bad_rubric is None

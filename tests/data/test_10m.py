"""10M's plan-per-folder layout (issue 26 point 3), on a tiny synthetic conversation built here.

Upstream (``src/beam/download_dataset.py``) writes each plan's chat to ``chats/10M/<n>/plan-<k>/chat.json``
with ids from 0, then joins them into ``chats/10M/<n>/chat.json`` as ``[{"plan-1": sessions}, ...]``,
each plan's ids moved up by the previous plan's last id + 1; its answering code walks that list.
``joined_as_upstream`` below is that join written out for the test, so the reader's two paths
(the joined file, the plan folders) are checked against it. No BEAM text: every message is made up.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pytest_beam.data import pins
from pytest_beam.data.data_error import BeamDataError
from pytest_beam.data.local_copy import git_blob_sha1, load_local
from pytest_beam.data.records import ABILITIES

PLANS = 11  # plan-10 must come after plan-9, not after plan-1


def plan_chat(plan: int) -> list[dict]:
    """Two sessions of two turns each; ids count from 0 within the plan, as upstream's plan files do."""
    sessions, next_id = [], 0
    for batch in (1, 2):
        turns = []
        for turn in (1, 2):
            pair = []
            for role in ("user", "assistant"):
                anchor = f"March-{plan + 1:02d}-2024" if (batch, turn, role) == (1, 1, "user") else None
                pair.append({"role": role, "id": next_id, "time_anchor": anchor, "index": f"{batch},{turn}",
                             "question_type": "main_question" if role == "user" else None,
                             "content": f"plan {plan} batch {batch} turn {turn} {role} says something made up"
                                        + (f" ->-> {batch},{turn}" if role == "user" else "")})
                next_id += 1
            turns.append(pair)
        sessions.append({"batch_number": batch, "turns": turns, "time_anchor": None})
    return sessions


def joined_as_upstream(chats: list[list[dict]]) -> list[dict]:
    """combine_10m_chats, written out: plan k's file becomes {"plan-<k+1>": sessions}, ids shifted."""
    joined, last_id = [], 0
    for index, chat in enumerate(copy.deepcopy(chats)):
        if last_id != 0:
            for batch in chat:
                for turn in batch["turns"]:
                    for message in turn:
                        message["id"] += last_id + 1
        last_id = chat[-1]["turns"][-1][-1]["id"]
        joined.append({f"plan-{index + 1}": chat})
    return joined


def questions(last_id: int) -> dict:
    return {ability: [{"question": f"made-up {ability} question {i}?", "rubric": [f"made-up item {i}"],
                       "answer": "made up", "source_chat_ids": [last_id - i]} for i in range(2)]
            for ability in ABILITIES}


def write(root: Path, rel: str, value: object) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=4), encoding="utf-8")
    return rel


def pin_all(root: Path, rels: list[str]) -> dict[str, pins.FilePin]:
    return {rel: pins.FilePin(rel, (root / rel).stat().st_size, git_blob_sha1(root / rel), None) for rel in rels}


@pytest.fixture
def plans_folder(tmp_path):
    root = tmp_path / "beam"
    chats = [plan_chat(k) for k in range(PLANS)]
    rels = [write(root, f"chats/10M/1/plan-{k}/chat.json", chat) for k, chat in enumerate(chats)]
    total = 8 * PLANS
    rels.append(write(root, "chats/10M/1/probing_questions/probing_questions.json", questions(total - 1)))
    return root, chats, rels


def test_the_plans_join_into_one_conversation_as_beams_code_joins_them(plans_folder, tmp_path):
    root, chats, rels = plans_folder
    corpus = load_local(root, ["1"], {}, pinned=pin_all(root, rels), tier="10M")
    conversation = corpus.conversations["1"]
    messages = conversation.messages()
    assert [m.id for m in messages] == list(range(8 * PLANS))
    assert len(conversation.sessions) == 2 * PLANS and [s.number for s in conversation.sessions] == list(
        range(1, 2 * PLANS + 1))
    # plan order is numeric: plan-10's messages come last, after plan-9's
    assert messages[8 * 9].text.startswith("plan 9 batch 1") and messages[8 * 10].text.startswith("plan 10 batch 1")
    assert conversation.sessions[-1].date is None and conversation.sessions[-2].date.isoformat() == "2024-03-11"
    # the upstream joined file gives the same ids for the same messages
    upstream = [m for plan in joined_as_upstream(chats) for batch in next(iter(plan.values()))
                for turn in batch["turns"] for m in turn]
    assert [(m["id"], m["content"]) for m in upstream] == [(m.id, m.text) for m in messages]
    # the questions' source ids are the joined ids, and the ids carry the tier
    q = corpus.questions["10M/conv1:information_extraction:0"]
    assert q.source_message_ids == (8 * PLANS - 1,) and q.tier == "10M"


def test_the_joined_file_is_read_as_upstream_wrote_it(plans_folder):
    """Where the joined chat.json is there (a clone holds both), it is what is read, as BEAM's code
    does, and it gives the same conversation as the plan folders."""
    root, chats, rels = plans_folder
    from_plans = load_local(root, ["1"], {}, pinned=pin_all(root, rels), tier="10M")
    joined_rel = write(root, "chats/10M/1/chat.json", joined_as_upstream(chats))
    for k in range(PLANS):  # gone: only the joined file can have given the conversation
        (root / f"chats/10M/1/plan-{k}/chat.json").unlink()
    kept = [r for r in rels if "plan-" not in r] + [joined_rel]
    from_joined = load_local(root, ["1"], {}, pinned=pin_all(root, kept), tier="10M")
    assert from_joined.conversations == from_plans.conversations
    assert from_joined.questions == from_plans.questions


def test_a_missing_plan_is_an_error_never_a_shorter_conversation(plans_folder):
    root, _, rels = plans_folder
    pinned = pin_all(root, rels)
    (root / "chats/10M/1/plan-4/chat.json").unlink()
    with pytest.raises(BeamDataError, match=r"plan-4/chat.json is missing"):
        load_local(root, ["1"], {}, pinned=pinned, tier="10M")


def test_a_plan_that_differs_from_its_pin_is_named(plans_folder):
    root, _, rels = plans_folder
    pinned = pin_all(root, rels)
    path = root / "chats/10M/1/plan-2/chat.json"
    path.write_text(path.read_text().replace("made up", "made-up"), encoding="utf-8")
    with pytest.raises(BeamDataError) as err:
        load_local(root, ["1"], {}, pinned=pinned, tier="10M")
    assert str(path) in str(err.value) and pinned["chats/10M/1/plan-2/chat.json"].git_blob_sha1 in str(err.value)


def test_the_real_pins_know_every_plan_of_10M():
    """Ten conversations upstream, each with plan-0..plan-9 and the joined file, pinned by blob id."""
    tenm = [p for p in pins.UPSTREAM_FILES if p.startswith("chats/10M/")]
    for n in range(1, 11):
        assert f"chats/10M/{n}/chat.json" in tenm
        assert f"chats/10M/{n}/probing_questions/probing_questions.json" in tenm
        assert sorted(p for p in tenm if p.startswith(f"chats/10M/{n}/plan-")) == sorted(
            f"chats/10M/{n}/plan-{k}/chat.json" for k in range(10))

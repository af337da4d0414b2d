"""The two data sources, the pins, the conv4 repair and the lite slices."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from pytest_beam.data import pins
from pytest_beam.data.data_error import BeamDataError
from pytest_beam.data.huggingface import load_parquet
from pytest_beam.data.local_copy import load_local
from pytest_beam.data.repairs import CONV4_MESSAGE_97_SHA256, repair_conv4_message_97
from pytest_beam.data.sets import build_set, document_sha256, known_bad_rubrics, lite_spec, load_set

HF_EXTRA_FIELDS = ("conversation_seed", "narratives", "user_profile", "conversation_plan", "user_questions")
MESSAGE_KEYS = ("role", "id", "time_anchor", "index", "question_type", "content")


def hf_row(root: Path, cid: str) -> dict:
    """A row as the Hugging Face split has it: sessions of flat messages, all six keys, repr'd questions."""
    chat = json.loads((root / f"chats/100K/{cid}/chat.json").read_text())
    probing = json.loads((root / f"chats/100K/{cid}/probing_questions/probing_questions.json").read_text())
    sessions = [[{k: m.get(k) for k in MESSAGE_KEYS} for turn in s["turns"] for m in turn] for s in chat]
    row = {"conversation_id": cid, "chat": sessions, "probing_questions": repr(probing)}
    row.update({k: "not for the system" for k in HF_EXTRA_FIELDS})
    return row


@pytest.fixture(scope="module")
def small_parquet(tmp_path_factory, beam_data_dir):
    """Rows 1..17 in the split's order; only 4 and 17 carry data (row i is conversation i+1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for n in range(1, 18):
        if str(n) in ("4", "17"):
            rows.append(hf_row(beam_data_dir, str(n)))
        else:
            rows.append({"conversation_id": str(n), "chat": [], "probing_questions": "{}",
                         **{k: "" for k in HF_EXTRA_FIELDS}})
    path = tmp_path_factory.mktemp("hf") / "100K-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_parquet_and_local_directory_give_identical_records(small_parquet, beam_data_dir):
    bad = known_bad_rubrics()
    from_hf = load_parquet(small_parquet, ["4", "17"], bad, expected_sha256=sha(small_parquet))
    from_dir = load_local(beam_data_dir, ["4", "17"], bad)
    assert from_hf.conversations == from_dir.conversations
    assert from_hf.questions == from_dir.questions
    assert from_hf.references == from_dir.references
    assert len(from_dir.questions) == 40
    assert from_dir.conversations["17"].sessions[0].date.isoformat() == "2024-03-15"


def test_parquet_hash_is_checked_before_use(small_parquet):
    with pytest.raises(BeamDataError) as err:
        load_parquet(small_parquet, ["17"], {})  # the real split's pin, not this file's
    assert str(small_parquet) in str(err.value) and pins.HF_SHA256 in str(err.value)


@pytest.mark.parametrize("rel", ["chats/100K/17/chat.json", "chats/100K/17/probing_questions/probing_questions.json"])
def test_one_byte_change_to_a_pinned_file_names_the_file(tmp_path, beam_data_dir, rel):
    copy = tmp_path / "beam"
    shutil.copytree(beam_data_dir / "chats/100K/17", copy / "chats/100K/17")
    target = copy / rel
    target.chmod(0o644)
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises(BeamDataError) as err:
        load_local(copy, ["17"], {})
    message = str(err.value)
    assert str(target) in message and pins.LOCAL_SHA256[rel] in message and sha(target) in message


def test_every_local_file_is_pinned_and_matches(beam_data_dir):
    """Every file of the offline copy, all tiers, has a sha256 pin and matches it."""
    files = sorted(str(p.relative_to(beam_data_dir)) for p in (beam_data_dir / "chats").rglob("*.json"))
    assert files == sorted(pins.LOCAL_SHA256)
    assert all(sha(beam_data_dir / rel) == digest for rel, digest in pins.LOCAL_SHA256.items())
    assert {rel.split("/")[1] for rel in files} >= {"100K", "500K", "1M"}


def test_the_pins_table_is_the_copys_own_listing(beam_data_dir):
    """Sizes and git blob ids of all four tiers as UPSTREAM-FILES.tsv lists them, sha256 as SHA256SUMS."""
    import csv

    with (beam_data_dir / "UPSTREAM-FILES.tsv").open() as fh:
        listed = {r["path"]: r for r in csv.DictReader(fh, delimiter="\t")}
    sums = dict(reversed(line.split(None, 1)) for line in (beam_data_dir / "SHA256SUMS").read_text().splitlines())
    sums = {path.strip(): digest for path, digest in sums.items()}
    assert sorted(pins.UPSTREAM_FILES) == sorted(listed)
    for path, pin in pins.UPSTREAM_FILES.items():
        size = listed[path]["bytes"]
        expected_size = int(size) if size.isdigit() else None
        assert (pin.size, pin.git_blob_sha1) == (expected_size, listed[path]["git_blob_sha1"]), path
        assert pin.sha256 == sums.get(path), path
    tiers = {path.split("/")[1] for path in pins.UPSTREAM_FILES}
    assert tiers == {"100K", "500K", "1M", "10M"}


def test_a_file_pinned_by_git_blob_only_is_checked_byte_for_byte(tmp_path, beam_data_dir):
    """A file the offline copy lacks (1M, 10M) is pinned by its upstream git blob id: a user's
    clone of the upstream repository is checked against it, and a one-byte change is named."""
    from pytest_beam.data.local_copy import check_upstream_file, git_blob_sha1

    rel = "chats/100K/17/chat.json"
    pin = pins.UPSTREAM_FILES[rel]
    blob_only = pins.FilePin(pin.path, pin.size, pin.git_blob_sha1, None)
    copy = tmp_path / "chat.json"
    copy.write_bytes((beam_data_dir / rel).read_bytes())
    assert git_blob_sha1(copy) == pin.git_blob_sha1
    check_upstream_file(copy, blob_only)
    data = bytearray(copy.read_bytes())
    data[100] ^= 0x01
    copy.write_bytes(bytes(data))
    with pytest.raises(BeamDataError) as err:
        check_upstream_file(copy, blob_only)
    message = str(err.value)
    assert str(copy) in message and pin.git_blob_sha1 in message and git_blob_sha1(copy) in message


def test_missing_directory_says_how_to_fix(tmp_path):
    with pytest.raises(BeamDataError, match="--beam-data") as err:
        load_local(tmp_path / "nowhere", ["17"], {})
    # every way the directory can be given, and how to leave it unset (issue 16 point 4)
    for way in ("--beam-data=DIR", "BEAM_DATA=DIR", "beam_data", "--beam-data= ", "BEAM_DATA= "):
        assert way in str(err.value), way


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:{port}", "http://beam-offline.invalid"])
def test_offline_hugging_face_fails_fast_with_its_message(tmp_path, monkeypatch, endpoint):
    """No network: the Hugging Face source says so in under 3 s, without its client's retries."""
    import time

    from huggingface_hub import constants

    from pytest_beam.data.huggingface import download_parquet

    monkeypatch.setattr(constants, "ENDPOINT", endpoint.format(port=closed_port()))
    started = time.monotonic()
    with pytest.raises(BeamDataError) as err:
        download_parquet(cache_dir=tmp_path / "hf")
    elapsed = time.monotonic() - started
    assert elapsed < 3.0, elapsed
    assert "not cached" in str(err.value) and "--beam-data=DIR" in str(err.value)
    assert "cannot reach" in str(err.value)


def test_conv4_message_97_is_cut_after_its_real_text(beam_data_dir):
    raw = json.loads((beam_data_dir / "chats/100K/4/chat.json").read_text())
    original = next(m["content"] for s in raw for t in s["turns"] for m in t if m["id"] == 97)
    assert hashlib.sha256(original.encode()).hexdigest() == CONV4_MESSAGE_97_SHA256
    repaired = repair_conv4_message_97(original)
    assert len(original) == 348_853
    assert len(repaired) < 25_000
    assert repaired.startswith(original[:22_000])
    assert "pytest-beam: the rest of this message was cut" in repaired
    corpus = load_local(beam_data_dir, ["4"], {})
    message = next(m for m in corpus.conversations["4"].messages() if m.id == 97)
    assert message.text == repaired


def test_conv4_repair_refuses_a_different_original():
    with pytest.raises(BeamDataError, match="conversation 4, message 97"):
        repair_conv4_message_97("x" * 10 + " " * 300)


def test_lite_slices_match_their_pinned_hashes(beam_data_dir):
    bench = load_set("lite", beam_data_dir, keep_markers=True)  # the pins are of BEAM's raw text
    spec = lite_spec()
    docs = bench.documents["17"]
    assert [list(m.id for m in d.messages) for d in docs] == [s["message_ids"] for s in spec["slices"]]
    assert [document_sha256(d) for d in docs] == [s["sha256"] for s in spec["slices"]]
    assert [(d.session_number, str(d.session_date)) for d in docs] == [(1, "2024-03-15"), (3, "2024-07-10")]
    assert "[message 156, user]" in docs[1].text() and "2024-07-10" in docs[1].text()
    assert [q.id for q in bench.questions] == spec["questions"]


def test_a_changed_slice_is_an_error(beam_data_dir):
    corpus = load_local(beam_data_dir, ["17"], {})
    conv = corpus.conversations["17"]
    session = conv.sessions[0]
    changed = [m if m.id != 18 else m.model_copy(update={"text": m.text + "!"}) for m in session.messages]
    corpus.conversations["17"] = conv.model_copy(
        update={"sessions": (session.model_copy(update={"messages": tuple(changed)}), *conv.sessions[1:])})
    with pytest.raises(BeamDataError, match=r"slice-18 .*does not match"):
        build_set(corpus, "lite")


def test_full_set_shape(beam_data_dir):
    bench = load_set("full", beam_data_dir)
    assert len(bench.questions) == 100
    assert sorted(bench.documents) == ["1", "13", "17", "4", "6"]
    assert [d.name for d in bench.documents["1"]] == ["session-1", "session-2", "session-3"]
    assert len(bench.documents["6"]) == 5
    flagged = sorted(q.id for q in bench.questions if q.known_bad_rubric)
    assert flagged == sorted(qid for qid in known_bad_rubrics() if qid.split(":")[0][4:] in bench.documents)
    nested = next(q for q in bench.questions if q.id == "conv13:event_ordering:1")
    assert {70, 72, 74, 174, 176} <= set(nested.source_message_ids)
    abstention = [q for q in bench.questions if q.ability == "abstention"]
    assert all(q.source_message_ids == () for q in abstention)


def test_no_question_record_exposes_its_reference_answer(beam_data_dir):
    corpus = load_local(beam_data_dir, ["1", "4", "6", "13", "17"], known_bad_rubrics())
    assert len(corpus.references) == 100
    for qid, reference in corpus.references.items():
        question = corpus.questions[qid]
        assert "reference" not in question.model_dump() and "answer" not in question.model_dump()
        system_view = question.for_system().model_dump_json()
        assert set(question.for_system().model_dump()) == {"id", "conversation_id", "question"}
        if len(reference.text) > 20:
            assert reference.text not in system_view
            assert reference.text not in question.model_dump_json()

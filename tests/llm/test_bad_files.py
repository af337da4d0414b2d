"""Issue 15 point 3: a corrupt cache entry is a cache miss (warned, replaced); a broken cassette line is an error.

Real parts: the scripted HTTP model server and files on disk.
"""

from __future__ import annotations

import json

import pytest

from pytest_beam.llm import Cassette, CassetteError, CorruptCacheEntry, ResponseCache
from tests.model_server import Reply

MSGS = [{"role": "user", "content": "What did I call my sister's dog?"}]


@pytest.mark.parametrize("garbage", [b"", b"{\"choices\": [", b"<html>proxy error</html>", b"[1, 2]",
                                     b"{\"no\": \"choices\"}"])
def test_a_corrupt_cache_entry_is_a_miss_that_is_warned_and_replaced(model_server, make_client, tmp_path, garbage):
    cache = ResponseCache(tmp_path / "cache")
    model_server.script(Reply.say("Biscuit"), Reply.say("Biscuit again"))
    make_client(model_server, cache=cache).chat(role="agent", messages=MSGS)
    (entry,) = (tmp_path / "cache").rglob("*.json")
    entry.write_bytes(garbage)  # a disk error, an editor, a proxy page cached by an older version

    client = make_client(model_server, cache=ResponseCache(tmp_path / "cache"))
    with pytest.warns(CorruptCacheEntry) as warned:
        result = client.chat(role="agent", messages=MSGS)
    assert result.text == "Biscuit again" and not result.cached  # fetched again, not an endpoint failure
    assert model_server.request_count == 2
    (message,) = [str(w.message) for w in warned]
    assert str(entry) in message and "\n" not in message

    assert json.loads(entry.read_bytes())["choices"][0]["message"]["content"] == "Biscuit again"  # replaced
    again = make_client(model_server, cache=ResponseCache(tmp_path / "cache")).chat(role="agent", messages=MSGS)
    assert again.cached and again.text == "Biscuit again" and model_server.request_count == 2


def _recorded(model_server, make_client, path):
    model_server.script(Reply.say("one"), Reply.say("two"))
    client = make_client(model_server, cassette=Cassette(path, "all"))
    client.chat(role="agent", messages=MSGS)
    client.chat(role="agent", messages=[{"role": "user", "content": "and then?"}])
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(("broken", "why"), [
    ('{"fp": "abc", "i": 0, "body": "trunc', "not JSON"),
    ("1" * 5000, "not JSON"),  # json's ValueError that is no JSONDecodeError (it has no .msg)
    ("[1, 2, 3]", "not a JSON object"),
    ('{"i": 0, "body": "{}"}', "fp"),
    ('{"fp": "abc", "i": "first", "body": "{}"}', "i"),
    ('{"fp": "abc", "i": 0}', "body"),
])
def test_a_cassette_line_that_does_not_parse_names_the_file_and_line(model_server, make_client, tmp_path, broken, why):
    path = tmp_path / "run.jsonl"
    lines = _recorded(model_server, make_client, path)
    assert len(lines) == 3  # header + two responses
    path.write_text("\n".join([lines[0], lines[1], broken, lines[2]]) + "\n", encoding="utf-8")
    for mode in ("none", "new_episodes", "once"):
        with pytest.raises(CassetteError) as info:
            Cassette(path, mode)
        message = str(info.value)
        assert f"{path}:3" in message and why in message
        assert info.value.path == str(path) and info.value.line == 3


def test_a_well_formed_cassette_and_blank_lines_still_load(model_server, make_client, tmp_path):
    path = tmp_path / "run.jsonl"
    lines = _recorded(model_server, make_client, path)
    path.write_text("\n".join([lines[0], "", lines[1], "  ", lines[2]]) + "\n", encoding="utf-8")
    assert len(Cassette(path, "none")) == 2


def test_the_committed_cassette_loads(repo_root):
    cassette = Cassette(repo_root / "fixtures" / "cassettes" / "lite-qwen.jsonl", "none")
    assert len(cassette) > 0


def test_a_first_line_json_refuses_without_a_decode_error_is_a_replay_problem(tmp_path):
    """json raises a plain ValueError (no ``.msg``) for an integer over Python's digit limit:
    still one line naming the cassette, not an AttributeError."""
    from pytest_beam.llm.cassette import replay_problem

    path = tmp_path / "c.jsonl"
    path.write_text("1" * 5000 + "\n", encoding="utf-8")
    problem = replay_problem(path)
    assert problem is not None
    assert problem.startswith(f"cassette {path}:1 is not JSON (Exceeds the limit (4300 digits)")
    assert problem.endswith("): not a pytest-beam cassette")

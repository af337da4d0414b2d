"""Issue 32 item 6: a reply the harness could not use (an extraction cut off by its token cap, a
judge verdict that does not parse) was kept in the response cache, so every later run replayed
the failure instead of asking again. Two lite runs share one cache, as a user's runs do: the
first meets a model that cuts every extraction and answers the judge with prose; the second, a
sound model, must be asked again for exactly those calls."""

from __future__ import annotations

import json

import pytest

from tests.e2e.scripted_beam import ScriptedBeamModel
from tests.e2e.test_caps import beam
from tests.model_server import Reply, ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]


class CutAndGarbled(ScriptedBeamModel):
    def __call__(self, body):
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if schema == "Extraction":
            return Reply.say('{"entities": [{"type": "Per', finish_reason="length")
        if "You are an expert evaluator" in "\n".join(str(m.get("content")) for m in body["messages"]):
            return Reply.say("The response seems reasonable overall.")
        return super().__call__(body)


def _kinds(server) -> dict[str, int]:
    out = {"extraction": 0, "judge": 0}
    for request in server.chat_requests:
        text = json.dumps(request.body)
        if '"name": "Extraction"' in text:
            out["extraction"] += 1
        elif "You are an expert evaluator" in text:
            out["judge"] += 1
    return out


def _record(project, run: int) -> dict:
    records = sorted((project / "results").glob("*/record.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(records[run].read_text())


def test_unusable_replies_are_asked_again_by_the_next_run(tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    cache = f"--beam-cache={tmp_path / 'cache'}"
    with ScriptedModelServer(responder=CutAndGarbled()) as server:  # one endpoint: the cache is keyed by it
        first = beam(tmp_path, server, beam_data_dir, cache, "--beam-snapshot=off")
        asked_first = _kinds(server)
        record = _record(tmp_path, 0)
        assert record["graph"]["17"]["empty_extractions"] == record["graph"]["17"]["chunks"] > 0, first.stdout[-3000:]
        assert all("parse_error" in q["flags"] for q in record["questions"]), record["questions"]
        assert asked_first["extraction"] == 2 * record["graph"]["17"]["chunks"]  # each cut reply asked once more

        server.reset()
        server.responder = ScriptedBeamModel()  # the model is sound now
        second = beam(tmp_path, server, beam_data_dir, cache, "--beam-snapshot=off")
        asked_second = _kinds(server)
    record = _record(tmp_path, 1)
    chunks = record["graph"]["17"]["chunks"]
    assert asked_second["extraction"] == chunks, asked_second  # none of the cut replies was replayed
    judged_items = sum(len(q["items"]) for q in record["questions"])
    assert asked_second["judge"] == judged_items > 0, asked_second  # nor the garbled verdicts
    assert second.returncode == 0, second.stdout[-4000:]
    assert record["graph"]["17"]["empty_extractions"] == 0
    assert not any("parse_error" in q["flags"] for q in record["questions"])
    assert {q["outcome"] for q in record["questions"]} == {"passed"}

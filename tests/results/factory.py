"""Hand-built, realistic run records for the results-room tests."""

from __future__ import annotations

from pytest_beam.llm import Usage
from pytest_beam.results.build import with_aggregates
from pytest_beam.results.question_record import QuestionRecord
from pytest_beam.results.schema import RunRecord
from pytest_beam.scoring.scores import ItemScore

XSS_SCRIPT = "<script>window.__pwned=1</script>"
XSS_IMG = '<img src=x onerror="window.__pwned=2">'


def _usage(agent_calls: int, judge_calls: int) -> dict[str, Usage]:
    return {
        "agent": Usage(calls=agent_calls, cached_calls=0, prompt_tokens=1800 * agent_calls,
                          completion_tokens=90 * agent_calls, seconds=1.7 * agent_calls),
        "judge": Usage(calls=judge_calls, cached_calls=1, prompt_tokens=600 * judge_calls,
                          completion_tokens=40 * judge_calls, seconds=0.6 * judge_calls),
    }


def questions(answer_ie0: str | None = None, score_ie0: float = 1.0) -> list[QuestionRecord]:
    ie0 = QuestionRecord(
        id="conv1:information_extraction:0",
        conversation_id="conv1",
        ability="information_extraction",
        index=0,
        question=f"What did I say my sister's dog is called? (I once typed {XSS_SCRIPT} by mistake)",
        answer=answer_ie0 if answer_ie0 is not None else
        f"Your sister's dog is called Biscuit.\nYou also pasted {XSS_SCRIPT} and {XSS_IMG} once.",
        score=score_ie0,
        score_excluding_known_bad=score_ie0,
        evidence_recall=1.0,
        items=[
            ItemScore(
                rubric_item="Names the dog Biscuit", score=score_ie0, reason="The answer says Biscuit.", parsed=True
            ),
        ],
        outcome="passed" if score_ie0 >= 0.5 else "failed",
        usage=_usage(3, 1),
        agent_steps=3,
        seconds=6.1,
        scorer="default",
        source_message_ids=[12, 13],
        retrieved_message_ids=[12, 13, 40],
        answer_changed=False,
        trace=[
            {"kind": "model", "tool": None, "arguments": None, "result_chars": 0, "message_ids": [],
             "text": "I should search the chat for the dog."},
            {"kind": "tool", "tool": "search_messages", "arguments": {"query": "sister dog name <b>"},
             "result_chars": 812, "message_ids": [12, 40]},
            {"kind": "tool", "tool": "read_messages", "arguments": {"ids": [13]},
             "result_chars": 240, "message_ids": [13]},
        ],
    )
    ie1 = QuestionRecord(
        id="conv1:information_extraction:1",
        conversation_id="conv1",
        ability="information_extraction",
        index=1,
        question="Which city did I move to in spring?",
        answer="You moved to Lisbon.",
        score=0.5,
        score_excluding_known_bad=None,
        evidence_recall=0.5,
        flags=["known_bad_rubric"],
        known_bad_reason="the rubric names a city the chat never mentions",
        items=[
            ItemScore(rubric_item="Says Lisbon", score=1.0, reason="Correct city.", parsed=True),
            ItemScore(rubric_item="Mentions the move in April", score=0.0, reason="Not mentioned.", parsed=True),
        ],
        outcome="xfailed",
        usage=_usage(2, 2),
        agent_steps=2,
        seconds=4.0,
        scorer="default",
        source_message_ids=[50, 51],
        retrieved_message_ids=[50],
        trace=[  # as the agent writes them: "type" rather than "kind"
            {"type": "model", "step": 1, "mode": "tools", "text": None,
             "tool_calls": [{"name": "search_messages", "arguments": {"query": "moved spring"}}],
             "finish_reason": "tool_calls", "final": False},
            {"type": "tool", "step": 1, "call_id": "c1", "tool": "search_messages",
             "arguments": {"query": "moved spring"}, "result_chars": 500, "message_ids": [50, 7], "error": False},
            {"type": "note", "event": "budget_warning", "calls_left": 1},
        ],
    )
    eo0 = QuestionRecord(
        id="conv1:event_ordering:0",
        conversation_id="conv1",
        ability="event_ordering",
        index=0,
        question="In what order did I plan the trip, book the flight and pack?",
        answer="Planned the trip\nPacked the bags\nBooked the flight\nBought a hat",
        score=0.5,
        score_excluding_known_bad=0.5,
        event_f1=0.75,
        event_tau_norm=0.666667,
        evidence_recall=0.0,
        flags=["parse_error"],
        event_detail={
            "precision": 0.75, "recall": 0.75, "event_f1": 0.75, "tau_b": 0.333333, "event_tau_norm": 0.666667,
            "f1_times_tau_norm": 0.5,
            "answer_lines": ["Planned the trip", "Packed the bags", "Booked the flight", "Bought a hat"],
            "alignment": [
                {"line": "Planned the trip", "event": "Plan the trip", "event_index": 0},
                {"line": "Packed the bags", "event": "Pack", "event_index": 2},
                {"line": "Booked the flight", "event": "Book the flight", "event_index": 1},
                {"line": "Bought a hat", "event": None, "event_index": None},
            ],
            "reference_order": ["Plan the trip", "Book the flight", "Pack", "Say goodbye"],
            "answer_order": ["Plan the trip", "Pack", "Book the flight", "Bought a hat"],
        },
        outcome="passed",
        usage=_usage(4, 4),
        agent_steps=4,
        seconds=9.5,
        scorer="default",
        source_message_ids=[3, 9],
        retrieved_message_ids=[22],
        trace=[
            {"kind": "tool", "tool": "search_messages", "arguments": {"query": "trip"}, "result_chars": 300,
             "message_ids": [22]},
        ],
    )
    return [ie0, ie1, eo0]


def run_record(run_id: str = "20250101T000000Z-aaaa", *, answer_ie0: str | None = None, score_ie0: float = 1.0,
               agent_model: str = "qwen2.5-7b", judge_model: str | None = None, scorer: str = "default",
               started: str = "2025-01-01T00:00:00+00:00") -> RunRecord:
    judge = judge_model or agent_model
    return with_aggregates(RunRecord(
        run_id=run_id,
        started=started,
        finished=started.replace("00:00:00", "00:03:10"),
        package_version="0.1.0",
        commit="b8ae684052bbee0db32a17ce8d6ed3b743ceb5ee",
        dirty=False,
        lockfile_hash="uv.lock:" + "0" * 64,
        mode="lite",
        data_source="fixture",
        data_revision="rev-1",
        scorer=scorer,
        models={"extraction": agent_model, "resolution": agent_model, "agent": agent_model, "judge": judge},
        judge_is_agent=judge == agent_model,
        settings={"mode": "lite", "chunk_size": 2000, "api_key_set": True, "results": ".beam/results"},
        pass_score=0.5,
        questions=questions(answer_ie0, score_ie0),
        usage={
            "extraction": Usage(calls=12, cached_calls=2, prompt_tokens=24000, completion_tokens=3000, seconds=30.0),
            "resolution": Usage(calls=5, prompt_tokens=8000, completion_tokens=500, seconds=8.0),
            "agent": Usage(calls=9, prompt_tokens=16200, completion_tokens=810, seconds=15.3),
            "judge": Usage(calls=7, cached_calls=3, prompt_tokens=4200, completion_tokens=280, seconds=4.2),
        },
        phase_seconds={"ingest": 41.0, "agent": 19.6, "judge": 5.0},
        graph={"conv1": {"entities_by_type": {"Person": 4, "Place": 3},
                         "relations_by_type": {"KNOWS": 2, "LIVES_IN": 3},
                         "chunks": 6, "empty_extractions": 1, "cache_hit": False, "seconds": 41.0}},
        exit_status=0,
    ))


def spread_record(run_id: str, scores: dict[str, float], *, scorer: str = "default",
                  judge_model: str = "gpt-4.1-mini", started: str = "2025-01-01T00:00:00+00:00",
                  stamp: bool = True) -> RunRecord:
    """A record over several conversations: one scored question per ``"convN:ability:i"`` id."""
    from pytest_beam.results.provenance import scoring_stamp

    qs = [QuestionRecord(id=qid, conversation_id=qid.split(":")[0], ability=qid.split(":")[1],
                         index=int(qid.split(":")[2]), question=f"question {qid}", answer=f"answer {score}",
                         score=score, score_excluding_known_bad=score, outcome="passed" if score >= 0.5 else "failed",
                         scorer=scorer)
          for qid, score in scores.items()]
    return with_aggregates(RunRecord(run_id=run_id, started=started, mode="complete", scorer=scorer,
                                     scoring=scoring_stamp(scorer) if stamp else None,
                                     models={"agent": "qwen2.5-7b", "judge": judge_model}, pass_score=0.5,
                                     questions=qs))

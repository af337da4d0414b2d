"""Event ordering end to end: line splitting, yes/no alignment through a scripted judge, the metric."""

from __future__ import annotations

import json
import math

import pytest

from pytest_beam.scoring import score_question
from pytest_beam.scoring.prompts import binary_classifier_messages

from .scripted import ScriptedJudge, letter_judge, line_for, question, snippets
from .test_metrics import vector_cases

ABCD = ("A", "B", "C", "D")


def answer_of(labels) -> str:
    return "\n".join(line_for(label) for label in labels)


@pytest.mark.parametrize("mode", ["default", "upstream"])
def test_vectors_end_to_end_through_scripted_judge(mode):
    for case in vector_cases():
        q = question("event_ordering", case["reference"])
        judge = letter_judge()
        result = score_question(q, answer_of(case["aligned_answer"]), judge, mode)
        d = result.event_detail
        assert d is not None
        for key in ("precision", "recall", "event_f1", "event_tau_norm"):
            assert round(getattr(d, key), 6) == pytest.approx(case[key], abs=1e-9), (case["case"], key)
        assert round(d.tau_b, 6) == pytest.approx(case["tau_b"], abs=1e-9)
        assert round(d.f1_times_tau_norm, 6) == pytest.approx(case["score"], abs=1e-9)
        assert round(result.event_f1, 6) == pytest.approx(case["event_f1"], abs=1e-9)
        assert round(result.event_tau_norm, 6) == pytest.approx(case["event_tau_norm"], abs=1e-9)
        expected_score = case["score"] if mode == "default" else case["event_tau_norm"]
        assert round(result.score, 6) == pytest.approx(expected_score, abs=1e-9), case["case"]
        assert result.mode == mode
        assert result.items == []
        # the alignment mapped every line of a rubric letter back to that letter
        for match in d.alignment:
            label = match.line.removeprefix("event ")
            assert match.event == (label if label in case["reference"] else None)
        assert result.judge_calls == len(judge.calls)


def test_alignment_calls_are_the_upstream_classifier_messages():
    q = question("event_ordering", ABCD)
    judge = letter_judge()
    result = score_question(q, answer_of(["B", "A"]), judge, "default")
    # line "event B": A? no, B? yes; line "event A": A? yes  -> 3 calls, event first, line second
    assert [snippets(c.messages) for c in judge.calls] == [
        ("A", "event B"),
        ("B", "event B"),
        ("A", "event A"),
    ]
    for call in judge.calls:
        assert call.role == "judge"
        event, line = snippets(call.messages)
        assert call.messages == binary_classifier_messages(event, line)
    assert result.judge_calls == 3
    assert [m.event_index for m in result.event_detail.alignment] == [1, 0]
    assert [m.replies for m in result.event_detail.alignment] == [["NO", "YES"], ["YES"]]


def test_unmatched_and_extra_lines():
    # C is never mentioned, "event Q" matches nothing: aligned [B, A, event Q, D]
    q = question("event_ordering", ABCD)
    result = score_question(q, answer_of(["B", "A", "Q", "D"]), letter_judge(), "default")
    d = result.event_detail
    assert d.answer_order == ["B", "A", "event Q", "D"]
    assert d.alignment[2].event is None and d.alignment[2].event_index is None
    assert (d.precision, d.recall) == (0.75, 0.75)
    assert result.event_f1 == pytest.approx(0.75)
    assert d.tau_b == pytest.approx(0.2)
    assert result.event_tau_norm == pytest.approx(0.6)
    assert result.score == pytest.approx(0.45)
    assert result.flags == []


def test_duplicate_line_matches_once_then_counts_as_extra():
    q = question("event_ordering", ("A", "B", "C"))
    judge = letter_judge()
    result = score_question(q, answer_of(["A", "A", "B", "C"]), judge, "default")
    d = result.event_detail
    # the second "event A" finds A used, is refused by B and C, and stays itself
    assert d.answer_order == ["A", "event A", "B", "C"]
    assert d.alignment[1].replies == ["NO", "NO"]
    assert result.judge_calls == 1 + 2 + 1 + 1
    assert (d.precision, d.recall) == (0.75, 1.0)
    assert result.event_f1 == pytest.approx(6 / 7)
    assert d.tau_b == pytest.approx(1 / 3)
    assert result.score == pytest.approx(6 / 7 * 2 / 3)


@pytest.mark.parametrize("answer", ["", "   ", "\n\n  \n"])
def test_empty_answer_default_scores_zero_without_calls(answer):
    judge = letter_judge()
    result = score_question(question("event_ordering", ("A", "B", "C")), answer, judge, "default")
    assert judge.calls == []
    assert result.judge_calls == 0
    assert result.event_f1 == 0.0 and result.event_tau_norm == 0.0 and result.score == 0.0
    assert result.event_detail.tau_b is None
    assert result.flags == ["tau_undefined"]
    json.loads(result.model_dump_json())


def test_empty_answer_upstream_sends_the_blank_line_and_scores_tau_norm():
    # upstream: "".split("\n") == [""], compared with every event; the rubric then sits tied
    # last in the answer's ranking while "" ranks first: tau_b = -3/sqrt(6*3)
    judge = letter_judge()
    result = score_question(question("event_ordering", ("A", "B", "C")), "", judge, "upstream")
    assert [snippets(c.messages)[1] for c in judge.calls] == ["", "", ""]
    assert result.event_f1 == 0.0
    tau = -3 / math.sqrt(18)
    assert result.event_detail.tau_b == pytest.approx(tau)
    assert result.score == pytest.approx((tau + 1) / 2)  # what upstream reports, despite F1 = 0
    assert result.event_detail.f1_times_tau_norm == 0.0


def test_nan_tau_becomes_zero_and_is_flagged():
    # a one-event rubric answered perfectly: F1 = 1 but tau-b over one item is undefined
    result = score_question(question("event_ordering", ("A",)), line_for("A"), letter_judge(), "default")
    assert result.event_f1 == 1.0
    assert result.event_detail.tau_b is None
    assert result.event_tau_norm == 0.0
    assert result.score == 0.0
    assert result.flags == ["tau_undefined"]
    up = score_question(question("event_ordering", ("A",)), line_for("A"), letter_judge(), "upstream")
    assert up.score == 0.0 and up.flags == ["tau_undefined"]


def test_blank_lines_dropped_in_default_kept_in_upstream():
    answer = f"{line_for('A')}\n\n   {line_for('B')}  \n\r\n{line_for('C')}\n"
    q = question("event_ordering", ("A", "B", "C"))

    default_judge = letter_judge()
    default = score_question(q, answer, default_judge, "default")
    assert default.event_detail.answer_lines == ["event A", "event B", "event C"]
    assert all(snippets(c.messages)[1].strip() for c in default_judge.calls)
    assert default.score == 1.0 and default.judge_calls == 3

    upstream_judge = letter_judge()
    upstream = score_question(q, answer, upstream_judge, "upstream")
    assert upstream.event_detail.answer_lines == ["event A", "", "   event B  ", "\r", "event C", ""]
    sent_lines = [snippets(c.messages)[1] for c in upstream_judge.calls]
    assert "" in sent_lines and "   event B  " in sent_lines and "\r" in sent_lines
    assert upstream.event_f1 < 1.0  # the blank lines count as extra items upstream
    assert upstream.judge_calls == len(upstream_judge.calls)


def test_list_numbering_is_kept_as_the_judge_sees_it():
    seen = []

    def respond(messages):
        event, line = snippets(messages)
        seen.append(line)
        return "yes" if line.endswith(f"event {event}") else "no"

    result = score_question(
        question("event_ordering", ("A", "B")), "1. event A\n  2) event B", ScriptedJudge(respond), "default"
    )
    assert seen == ["1. event A", "2) event B"]
    assert result.score == 1.0


@pytest.mark.parametrize(
    ("reply", "matched"),
    [("YES", True), ("Yes.", True), ("**yes**", True), ("NO", False), ("No", False), ("", False), ("Maybe", False)],
)
def test_yes_is_a_case_insensitive_substring(reply, matched):
    judge = ScriptedJudge(lambda messages: reply)
    result = score_question(question("event_ordering", ("A", "B")), "something", judge, "default")
    assert (result.event_detail.alignment[0].event == "A") is matched


@pytest.mark.parametrize("mode", ["default", "upstream"])
def test_judge_exception_propagates(mode):
    def respond(messages):
        return ConnectionError("judge endpoint unreachable")

    with pytest.raises(ConnectionError):
        score_question(question("event_ordering", ABCD), answer_of(ABCD), ScriptedJudge(respond), mode)


def test_no_rubric_judge_calls_for_event_ordering():
    judge = letter_judge()
    score_question(question("event_ordering", ABCD), answer_of(ABCD), judge, "upstream")
    assert all([m["role"] for m in c.messages] == ["system", "user"] for c in judge.calls)
    assert len(judge.calls) == 4  # each line matches at its first unused event

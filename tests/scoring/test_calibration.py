"""Issue 25 point 1: judge calibration cases built from BEAM's own reference answers, and the figures.

The cases come from the real BEAM data; the judges are real HTTP endpoints (the scripted model
server, as the declared test double of a model) behind the real model client, so the counts below
are what `pytest-beam judge-check` would print for such a judge.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from pytest_beam.data.sets import load_set
from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels
from pytest_beam.scoring.agreement import agreement_stats, cohen_kappa
from pytest_beam.scoring.calibration import (
    DONT_KNOW_ANSWER,
    CaseVerdict,
    build_cases,
    missing_from_reference,
    sample_cases,
)
from pytest_beam.scoring.judge_check import run_judge_check
from tests.model_server import Reply


@pytest.fixture(scope="module")
def lite(beam_data_dir):
    return load_set("lite", beam_data_dir)


@pytest.fixture(scope="module")
def full(beam_data_dir):
    return load_set("full", beam_data_dir)


def test_the_lite_set_gives_nine_labelled_cases(lite):
    cases = build_cases(lite.questions, lite.references)
    got = [(c.id, c.expected_pass, c.answer) for c in cases]
    ie, ms = "conv17:information_extraction:0", "conv17:multi_session_reasoning:0"
    days = "You said the afterschool activities are on Tuesdays and Thursdays."
    scenes = "I had filmed 12 scenes by July 5 and had 4 scenes left to film."
    assert got == [
        (f"{ie}#reference:0", True, days), (f"{ie}#other_reference:0", False, scenes),
        (f"{ie}#empty:0", False, ""), (f"{ie}#dont_know:0", False, DONT_KNOW_ANSWER),
        (f"{ms}#reference:0", True, scenes), (f"{ms}#reference:1", True, scenes),
        (f"{ms}#other_reference:0", False, days), (f"{ms}#empty:0", False, ""),
        (f"{ms}#dont_know:0", False, DONT_KNOW_ANSWER),
    ]
    assert [c.rubric_item for c in cases[4:6]] == ["LLM response should state: had filmed 12 scenes",
                                                   "LLM response should state: had 4 scenes left to film"]
    assert all(c.excluded is None for c in cases)


def test_the_full_set_gives_every_kind_and_flags_references_that_lack_their_item(full):
    cases = build_cases(full.questions, full.references)
    kinds = Counter((c.kind, c.expected_pass) for c in cases)
    assert kinds == {("reference", True): 220, ("other_reference", False): 90, ("empty", False): 90,
                     ("dont_know", False): 80, ("dont_know", True): 10, ("same_event", True): 59,
                     ("other_event", False): 59}
    # "I don't know" passes exactly the abstention questions, whose rubric asks for it
    assert {c.ability for c in cases if c.kind == "dont_know" and c.expected_pass} == {"abstention"}
    excluded = {c.id: c.excluded for c in cases if c.excluded}
    compliance = [i for i, why in excluded.items() if "expected_compliance" in why]
    assert len(compliance) == 35 and {i.split(":")[1] for i in compliance} == {"instruction_following",
                                                                               "preference_following"}
    # the known-bad rubric of conv1:temporal_reasoning:0 (rubric 8 weeks, reference 4 weeks) is found
    assert excluded["conv1:temporal_reasoning:0#reference:0"] == "the reference lacks the item's '8'"
    assert len(excluded) == 37
    # another question's reference: another ability, another conversation
    by_id = {q.id: q for q in full.questions}
    for c in cases:
        if c.kind in ("other_reference", "other_event"):
            source = by_id[c.source_question]
            assert source.conversation_id != c.conversation_id
            assert (source.ability != c.ability) == (c.kind == "other_reference")


def test_missing_words_match_on_stems_and_numbers_exactly():
    assert missing_from_reference("LLM response should state: labelled triangles", "Labeling the triangle") == []
    assert missing_from_reference("LLM response should state: 8 weeks", "exactly 4 weeks") == ["8"]
    assert missing_from_reference("LLM response should state: $68,000 budget", "a budget of $68000") == []


def test_a_sample_keeps_every_kind_and_is_the_same_every_time(full):
    cases = build_cases(full.questions, full.references)
    one, two = sample_cases(cases, 24), sample_cases(cases, 24)
    assert [c.id for c in one] == [c.id for c in two] and len(one) == 24
    assert Counter(c.kind for c in one) == {k: 4 for k in ("reference", "other_reference", "empty", "dont_know",
                                                         "same_event", "other_event")}
    assert all(c.excluded is None for c in one)
    assert len(sample_cases(cases, None)) == len(cases) - 37


def test_kappa_and_the_rates_on_known_counts(lite):
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == pytest.approx(0.5)
    assert cohen_kappa([True, False, True], [True, True, True]) == 0.0  # a constant judge: no skill
    assert cohen_kappa([True, True], [True, True]) is None  # undefined
    cases = build_cases(lite.questions, lite.references)
    said = {c.id: (c.expected_pass if c.kind != "other_reference" else True) for c in cases}  # 2 false passes
    pairs = [(c, CaseVerdict(case_id=c.id, judged_pass=said[c.id], score=1.0 * said[c.id])) for c in cases]
    stats = agreement_stats(pairs)
    assert (stats.n, stats.expected_pass, stats.expected_fail) == (9, 3, 6)
    assert (stats.false_passes, stats.false_fails) == (2, 0)
    assert stats.agreement == pytest.approx(7 / 9) and stats.false_pass_rate == pytest.approx(2 / 6)
    assert stats.false_fail_rate == 0.0
    # p_o = 7/9; judge passes 5/9, labels 3/9: p_e = 3/9*5/9 + 6/9*4/9 = 39/81
    assert stats.kappa == pytest.approx((7 / 9 - 39 / 81) / (1 - 39 / 81))
    assert stats.agreement_interval.low <= stats.agreement <= stats.agreement_interval.high
    assert stats.questions == 2


def _client(server) -> ModelClient:
    return ModelClient(EndpointConfig(base_url=server.base_url, backoff_base_s=0.001, timeout_s=10),
                       RoleModels(agent="judge-model", judge="judge-model"))


def _verdict_of(score: float):
    def respond(body):
        text = json.dumps(body["messages"])
        if "binary classifier" in text:
            return Reply.say("YES" if score else "NO")
        return Reply.json_object({"score": score, "reason": "constant"})
    return respond


@pytest.mark.parametrize("constant", [1.0, 0.0])
def test_a_judge_that_always_says_the_same_fails_the_bar(full, model_server_factory, constant):
    server = model_server_factory(responder=_verdict_of(constant))
    questions = [q for q in full.questions if q.conversation_id in ("1", "4")]
    check = run_judge_check(questions, full.references, _client(server), profile="default", sample=40)
    assert check.overall.n == 40 and server.request_count == 40
    assert check.overall.kappa in (0.0, None) and check.below_bar
    expected_fail = check.overall.expected_fail
    if constant:
        assert check.overall.false_passes == expected_fail and check.overall.false_fails == 0
    else:
        assert check.overall.false_fails == check.overall.expected_pass and check.overall.false_passes == 0
    assert "below the bar of 0.60" in check.warning()


def _keyword_judge(misreads: str | None = None):
    """A scripted judge that passes an item when every key word of it is in the answer; with
    ``misreads``, it fails every item containing that phrase whatever the answer says."""
    def respond(body):
        prompt = body["messages"][-1]["content"]
        item = re.search(r"RUBRIC CRITERION \(what to check\): (.*)", prompt).group(1).split(":", 1)[-1]
        answer = prompt.split("RESPONSE TO EVALUATE:", 1)[1].split("## EVALUATION RUBRIC", 1)[0].lower()
        keys = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", item) if len(w) > 3 or w.isdigit()]
        passed = all(k in answer for k in keys) and not (misreads and misreads in item)
        return Reply.json_object({"score": 1.0 if passed else 0.0, "reason": "keys"})
    return respond


def test_a_judge_that_reads_the_answer_passes_the_bar_with_exact_counts(lite, model_server_factory):
    """The keyword judge on the lite set passes exactly the three references and nothing else."""
    server = model_server_factory(responder=_keyword_judge())
    check = run_judge_check(lite.questions, lite.references, _client(server), profile="default",
                            judge_model="judge-model")
    assert server.request_count == 9
    o = check.overall
    assert (o.n, o.agreement, o.false_passes, o.false_fails, o.kappa) == (9, 1.0, 0, 0, 1.0)
    assert not check.below_bar and check.warning() is None
    assert set(check.abilities) == {"information_extraction", "multi_session_reasoning"}
    assert check.abilities["multi_session_reasoning"].n == 5


def test_a_judge_that_fails_a_right_answer_is_below_the_bar_though_its_kappa_clears(lite, model_server_factory):
    """What the embedded model did on the lite set: it failed the reference answer's "4 scenes left"
    item. The easy cases (empty, "I don't know", another question's reference) keep kappa at 24/33,
    above 0.6; 1 of the 3 reference answers failed is above the fail bar, and the warning says so."""
    server = model_server_factory(responder=_keyword_judge(misreads="scenes left"))
    check = run_judge_check(lite.questions, lite.references, _client(server), profile="default")
    o = check.overall
    assert (o.n, o.expected_pass, o.false_fails, o.false_passes) == (9, 3, 1, 0)
    assert o.kappa == pytest.approx(24 / 33) and not check.kappa_below_bar
    assert check.right_answer_fails == (1, 3) and check.fails_above_bar and check.below_bar
    assert check.warning() == ("the judge fails 1 of 3 right answers on their rubric items (0.33, above the bar of "
                               "0.15): its scores are not to be trusted (pytest-beam judge-check measures it on a "
                               "whole set)")
    relaxed = run_judge_check(lite.questions, lite.references, _client(server), profile="default", fail_bar=0.4)
    assert not relaxed.below_bar and relaxed.warning() is None

"""The record's numbers beside published tables (issue 17 points 2, 3, 4, 8): scoring stamp,
intervals per ability and overall, judge agreement, context tokens, system name and label."""

from __future__ import annotations

import hashlib

import pytest

from pytest_beam.results.aggregate import judge_agreement, percentile
from pytest_beam.results.build import with_aggregates
from pytest_beam.results.intervals import cluster_bootstrap
from pytest_beam.results.provenance import prompt_hashes, scoring_stamp
from pytest_beam.results.question_record import QuestionRecord
from pytest_beam.results.record_files import read_record, write_record
from pytest_beam.results.schema import RunRecord
from pytest_beam.results.summary import render_summary
from pytest_beam.scoring import prompts
from pytest_beam.scoring.scores import ItemScore
from tests.results.factory import run_record, spread_record

SCORES = {
    "conv1:temporal_reasoning:0": 1.0, "conv1:temporal_reasoning:1": 0.0, "conv1:abstention:0": 1.0,
    "conv2:temporal_reasoning:0": 0.5, "conv2:abstention:0": 0.0,
    "conv3:temporal_reasoning:0": 1.0, "conv3:abstention:0": 1.0, "conv3:abstention:1": 0.5,
}


def test_every_prompt_hash_is_the_sha256_of_its_text():
    hashes = prompt_hashes()
    assert hashes["judge"] == hashlib.sha256(prompts.JUDGE_PROMPT.encode()).hexdigest()
    assert hashes["binary_classifier_system"] == hashlib.sha256(prompts.BINARY_CLASSIFIER_SYSTEM.encode()).hexdigest()
    user = prompts.binary_classifier_user("{first}", "{second}")
    assert hashes["binary_classifier_user"] == hashlib.sha256(user.encode()).hexdigest()
    stamp = scoring_stamp("omnimemeval", judge_runs=3)
    assert (stamp.profile, stamp.judge_runs, stamp.prompt_sha256) == ("omnimemeval", 3, hashes)
    with pytest.raises(ValueError, match="unknown scoring profile"):
        scoring_stamp("nonsense")


def test_stamp_models_and_names_survive_the_round_trip(tmp_path):
    r = spread_record("run-a", SCORES, scorer="upstream").model_copy(
        update={"system": "long-context", "label": "baseline v1", "rejudged_from": "run-0"})
    write_record(tmp_path / "run-a", r, [])
    back = read_record(tmp_path / "run-a")
    assert back.profile == "upstream" and back.scoring.prompt_sha256 == prompt_hashes()
    assert back.models == {"agent": "qwen2.5-7b", "judge": "gpt-4.1-mini"}
    assert (back.system, back.label, back.rejudged_from) == ("long-context", "baseline v1", "run-0")
    text = "\n".join(render_summary(back))
    assert "label baseline v1, system long-context" in text
    assert "scorer upstream" in text and "re-judged the answers of run run-0" in text


def test_an_older_record_without_a_stamp_takes_its_profile_from_the_scorer():
    assert RunRecord(run_id="old", scorer="upstream").profile == "upstream"


def test_intervals_per_ability_and_overall_are_the_cluster_bootstrap_of_the_scores(tmp_path):
    r = spread_record("run-a", SCORES)
    tr = {k: v for k, v in SCORES.items() if ":temporal_reasoning:" in k}
    expected = cluster_bootstrap(tr)
    iv = r.abilities["temporal_reasoning"].interval
    assert (iv.low, iv.high, iv.clusters, iv.resamples, iv.seed) == (
        expected.low, expected.high, 3, expected.resamples, expected.seed)
    overall = cluster_bootstrap(SCORES)
    assert (r.overall.interval.low, r.overall.interval.high) == (overall.low, overall.high)
    assert r.overall.interval.low <= r.overall.mean <= r.overall.interval.high
    # seeded: the same scores give the same interval, also after a write and a read
    write_record(tmp_path / "run-a", r, [])
    assert read_record(tmp_path / "run-a").overall.interval == r.overall.interval
    assert spread_record("again", SCORES).overall.interval == r.overall.interval


def test_an_interval_resamples_conversations_not_questions():
    # conv1: four 1.0s, conv2: four 0.0s. Drawn as conversations, a resample's mean is 0, 0.5 or 1.
    scores = {f"conv1:abstention:{i}": 1.0 for i in range(4)} | {f"conv2:abstention:{i}": 0.0 for i in range(4)}
    iv = spread_record("r", scores).overall.interval
    assert iv.clusters == 2 and (iv.low, iv.high) == (0.0, 1.0)


def test_errors_and_skips_stay_out_of_the_interval():
    r = spread_record("r", {"conv1:abstention:0": 1.0, "conv2:abstention:0": 0.0})
    errored = QuestionRecord(id="conv3:abstention:0", conversation_id="conv3", ability="abstention", outcome="error")
    r2 = with_aggregates(r.model_copy(update={"questions": [*r.questions, errored]}))
    assert r2.overall.interval.clusters == 2 and r2.overall.interval == r.overall.interval
    assert with_aggregates(RunRecord(run_id="none", questions=[errored])).overall.interval is None


def test_summary_shows_the_interval_of_every_mean():
    lines = render_summary(spread_record("r", SCORES))
    iv = spread_record("r", SCORES).abilities["abstention"].interval
    ab = next(line.split() for line in lines if line.startswith("abstention"))
    assert ab[:5] == ["abstention", "4", "0.625", f"[{iv.low:.3f},", f"{iv.high:.3f}]"]
    assert any(line.startswith("intervals: 95% cluster bootstrap over 3 conversation(s), 10,000 resamples")
               for line in lines)


def test_judge_agreement_is_the_share_of_items_whose_repeats_all_agree():
    def item(*repeats: float) -> ItemScore:
        return ItemScore(rubric_item="x", score=sum(repeats) / len(repeats), repeats=list(repeats))

    qs = [QuestionRecord(id="conv1:abstention:0", ability="abstention", score=1.0,
                         items=[item(1.0, 1.0, 1.0), item(0.5, 1.0, 1.0)]),
          QuestionRecord(id="conv2:abstention:0", ability="abstention", score=0.0, items=[item(0.0, 0.0, 0.0)])]
    assert judge_agreement(qs) == pytest.approx(2 / 3)
    assert judge_agreement(run_record().questions) is None  # one judge run: nothing to agree
    r = with_aggregates(RunRecord(run_id="r", questions=qs, scoring=scoring_stamp("default", judge_runs=3)))
    assert r.overall.judge_agreement == pytest.approx(2 / 3)
    assert (
        "judge agreement: 66.7% of rubric items (and event-ordering lines) got the same verdict"
        " in every repeat (3 judge runs)"
    ) in "\n".join(render_summary(r))


def test_context_tokens_mean_and_nearest_rank_p95():
    tokens = list(range(100, 2100, 100))  # 20 questions: 100 .. 2000
    qs = [QuestionRecord(id=f"conv{i + 1}:abstention:0", ability="abstention", score=1.0, context_tokens=t)
          for i, t in enumerate(tokens)]
    r = with_aggregates(RunRecord(run_id="r", questions=qs))
    assert r.overall.context_tokens_mean == pytest.approx(1050.0)
    assert r.overall.context_tokens_p95 == 1900.0  # rank ceil(0.95 * 20) = 19
    assert percentile([], 0.95) is None and percentile([7.0], 0.95) == 7.0
    assert "context tokens per question: mean 1,050, p95 1,900" in "\n".join(render_summary(r))


def test_settings_resolve_judge_runs_and_label_by_flag_env_and_ini():
    from pytest_beam.setting_sources import resolve
    from pytest_beam.settings import OPTION_BY_NAME

    def settings(flags=None, environ=None, ini=None):
        return resolve((flags or {}).get, (ini or {}).get, environ or {})

    assert (settings().judge_runs, settings().label) == (1, None)
    assert settings({"judge_runs": "3"}).judge_runs == 3
    assert settings(environ={"BEAM_JUDGE_RUNS": "2"}).judge_runs == 2
    assert settings(ini={"label": "nightly"}).label == "nightly"
    assert settings({"label": "a"}, {"BEAM_LABEL": "b"}).label == "a"  # the flag wins
    assert OPTION_BY_NAME["judge_runs"].flag_name == "--beam-judge-runs"
    assert OPTION_BY_NAME["label"].flag_name == "--beam-label"
    assert settings({"label": "x"}).public_dict()["label"] == "x"

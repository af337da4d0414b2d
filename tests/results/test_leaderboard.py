"""Several systems ranked with cost beside score: the record, the summary and the page (issue 44 point 2)."""

from __future__ import annotations

from pytest_beam.llm.meter import Usage
from pytest_beam.results.build import usage_by_system
from pytest_beam.results.html import render_html
from pytest_beam.results.leaderboard import leaderboard
from pytest_beam.results.question_record import QuestionRecord
from pytest_beam.results.schema import IngestEntry, RunRecord
from pytest_beam.results.summary import render_summary
from pytest_beam.results.system_stats import system_stats

SCORES = {  # system -> its three question scores, its answering tokens per question
    "graphrag": ((1.0, 0.0, 0.5), 300),
    "hindsight": ((1.0, 1.0, 0.0), 200),
    "bm25": ((1.0, 0.5, 0.5), 1000),
    "gold-evidence": ((1.0, 1.0, 1.0), 100),
}
# what each system's own ingest cost (its library's calls through the relay for hindsight)
INGEST = {"graphrag/1": {"extraction": {"replayed_calls": 3, "cached_tokens": 3000}},  # from a cassette
          "hindsight/1": {"hindsight extraction": {"calls": 4, "prompt_tokens": 3800, "completion_tokens": 200}},
          "bm25/1": {}, "gold-evidence/1": {}}


def _record() -> RunRecord:
    questions = []
    for system, (scores, tokens) in SCORES.items():
        for index, score in enumerate(scores):
            questions.append(QuestionRecord(
                id=f"conv1:information_extraction:{index}", conversation_id="1", ability="information_extraction",
                index=index, score=score, outcome="passed" if score >= 0.5 else "failed", system=system,
                usage={"agent": Usage(calls=1, prompt_tokens=tokens, completion_tokens=0),
                       "judge": Usage(calls=2, prompt_tokens=50, completion_tokens=0)}))
    ingest = {key: IngestEntry(usage={role: Usage.model_validate(row) for role, row in rows.items()})
              for key, rows in INGEST.items()}
    systems = system_stats(questions, list(SCORES), {"gold-evidence"}, ingest)
    by_system = usage_by_system(questions, ingest, list(SCORES))
    return RunRecord(run_id="r1", mode="lite", system="graphrag", questions=questions, systems=systems,
                     usage_by_system=by_system, leaderboard=leaderboard(systems, by_system, questions))


def test_ranked_by_mean_ties_by_tokens_per_point_the_aid_last_and_unranked():
    rows = _record().leaderboard
    # hindsight and bm25 tie on the mean (2 points of 3): bm25's 1,500 tokens per point beat hindsight's 2,300
    assert [(r.rank, r.system) for r in rows] == [(1, "bm25"), (2, "hindsight"), (3, "graphrag"),
                                                  (None, "gold-evidence")]
    bm25, hindsight, graphrag, gold = rows
    assert hindsight.mean == bm25.mean == 2 / 3 and graphrag.mean == 0.5
    assert (hindsight.calls, hindsight.tokens, hindsight.points) == (4 + 3, 3800 + 200 + 3 * 200, 2.0)
    assert (bm25.calls, bm25.tokens, bm25.points) == (3, 3 * 1000, 2.0)
    assert (hindsight.tokens_per_point, bm25.tokens_per_point) == (2300.0, 1500.0)
    # calls are live ones, as everywhere (issue 43); the replayed ingest's apart, its tokens as recorded
    assert (graphrag.calls, graphrag.replayed_calls, graphrag.tokens, graphrag.points) == (3, 3, 3000 + 3 * 300, 1.5)
    assert graphrag.tokens_per_point == 2600.0
    assert (hindsight.judge_calls, hindsight.judge_tokens) == (6, 150)  # the judge's cost is apart
    assert gold.measurement_aid and gold.rank is None


def test_a_replayed_call_counts_with_the_tokens_it_was_recorded_with():
    record = _record()
    graphrag = next(r for r in record.leaderboard if r.system == "graphrag")
    assert (graphrag.calls, graphrag.tokens) == (3, 3000 + 3 * 300)  # not 900: the replayed ingest's tokens count
    # the side-by-side table too: its ingest and its questions' tokens as recorded
    replayed = record.questions[0].model_copy(update={"usage": {"agent": Usage(replayed_calls=1, cached_tokens=77)}})
    entry = IngestEntry(usage={r: Usage.model_validate(u) for r, u in INGEST["graphrag/1"].items()})
    stats = system_stats([replayed], ["graphrag"], set(), {"graphrag/1": entry})
    assert stats["graphrag"].ingest_tokens == 3000 and stats["graphrag"].overall.tokens == 77


def test_the_summary_and_the_page_show_the_ranking():
    record = _record()
    lines = render_summary(record)
    start = lines.index(next(line for line in lines if line.startswith("leaderboard")))
    ranked = [line.split()[:2] for line in lines[start + 3:start + 7]]
    assert ranked == [["1", "bm25"], ["2", "hindsight"], ["3", "graphrag"], ["-", "gold-evidence"]]
    page = render_html(record)
    assert '<h2 id="leaderboard">Leaderboard</h2>' in page and "tokens/point" in page

"""Several systems in one record: per-system cells, the ceiling's gaps, the aid marked, not ranked (issue 18)."""

from __future__ import annotations

from pytest_beam.llm import Usage
from pytest_beam.results.build import with_aggregates
from pytest_beam.results.html import render_html
from pytest_beam.results.question_record import QuestionRecord
from pytest_beam.results.schema import IngestEntry, RunRecord
from pytest_beam.results.summary import render_summary
from pytest_beam.results.system_stats import system_stats
from pytest_beam.results.systems_text import side_by_side_rows
from tests.results.factory import run_record

SCORES = {  # system -> (information_extraction 0, information_extraction 1, event_ordering 0)
    "graphrag": (1.0, 0.0, 0.5),
    "bm25": (0.5, 0.5, 0.0),
    "gold-evidence": (1.0, 1.0, 0.5),
}


def _questions() -> list[QuestionRecord]:
    out = []
    for system, scores in SCORES.items():
        for (ability, index), score, ctx in zip([("information_extraction", 0), ("information_extraction", 1),
                                                 ("event_ordering", 0)], scores, (100, 300, 200)):
            out.append(QuestionRecord(
                id=f"conv1:{ability}:{index}", conversation_id="1", ability=ability, index=index, score=score,
                outcome="passed" if score >= 0.5 else "failed", system=system, evidence_recall=score,
                context_tokens=ctx if system != "graphrag" else None,
                usage={"agent": Usage(calls=1, prompt_tokens=ctx, completion_tokens=10),
                       "judge": Usage(calls=2, prompt_tokens=50, completion_tokens=5)}))
    return out


def _record() -> RunRecord:
    questions = _questions()
    systems = system_stats(questions, list(SCORES), {"gold-evidence"},
                           {"graphrag/1": IngestEntry(usage={"extraction": Usage(calls=7, prompt_tokens=900,
                                                                                 completion_tokens=100)}),
                            "bm25/1": IngestEntry(), "gold-evidence/1": IngestEntry()})
    return with_aggregates(RunRecord(run_id="r1", mode="lite", system="graphrag", questions=questions,
                                     systems=systems))


def test_each_system_gets_its_own_cells_and_the_ingest_it_paid_for():
    record = _record()
    assert list(record.systems) == ["graphrag", "bm25", "gold-evidence"]
    g, b, c = (record.systems[n] for n in SCORES)
    assert g.abilities["information_extraction"].mean == 0.5 and b.abilities["information_extraction"].mean == 0.5
    assert c.overall.mean == 2.5 / 3 and g.overall.mean == 0.5 and b.overall.mean == 1.0 / 3
    assert c.measurement_aid and not g.measurement_aid and not b.measurement_aid
    assert b.overall.context_tokens == 200.0 and g.overall.context_tokens is None
    assert b.overall.calls == 9 and b.overall.tokens == (100 + 300 + 200) + 3 * 10 + 3 * (50 + 5)
    assert (g.ingest_calls, g.ingest_tokens) == (7, 1000) and b.ingest_calls == 0
    # the top-level means are the first selected system's, not a mix of systems
    assert record.overall.mean == 0.5 and record.overall.n == 3


def test_lost_to_retrieval_and_to_reader_and_judge_come_from_the_ceiling():
    rows = side_by_side_rows(_record().systems)
    by = {(r[0] or prev, r[1]): r for r, prev in zip(rows, _abilities_down(rows))}
    assert by[("information_extraction", "graphrag")][9] == "+0.500"  # 1.0 - 0.5
    assert by[("information_extraction", "bm25")][9] == "+0.500"
    assert by[("event_ordering", "bm25")][9] == "+0.500"
    assert by[("overall", "graphrag")][9] == "+0.333"
    ceiling = by[("overall", "gold-evidence (measurement aid)")]
    assert ceiling[9] == "-" and ceiling[10] == "+0.167"  # 1.0 - 2.5/3
    assert by[("overall", "bm25")][10] == "-"
    # never ranked: the selected order in every ability, whatever the scores
    assert [r[1] for r in rows[:3]] == ["graphrag", "bm25", "gold-evidence (measurement aid)"]


def _abilities_down(rows):
    current, out = "", []
    for r in rows:
        current = r[0] or current
        out.append(current)
    return out


def test_the_summary_and_the_page_show_the_systems_side_by_side():
    record = _record()
    text = "\n".join(render_summary(record))
    assert "systems side by side" in text and "lost to retrieval" in text
    assert "gold-evidence (measurement aid)" in text and "never a system to rank" in text
    page = render_html(record)
    assert 'id="systems"' in page and "gold-evidence (measurement aid)" in page and "lost to reader+judge" in page


def test_a_single_system_summary_stays_as_it_was():
    record = run_record()
    text = "\n".join(render_summary(record))
    assert "systems side by side" not in text and "mean excl. known-bad" in text
    assert 'id="systems"' not in render_html(record)


def test_report_a_b_compares_the_first_systems_not_a_mix_of_systems():
    """A multi-system record's questions share ids across systems; `report A B` compared them as
    one pool (a question matched whichever system came last) and paired bm25 with graphrag."""
    from pytest_beam.results.compare import compare

    a = _record()
    better = [q.model_copy(update={"score": 1.0, "outcome": "passed"}) if q.system == "graphrag" else q
              for q in a.questions]
    b = with_aggregates(a.model_copy(update={"questions": better}))
    comparison = compare(a, b)
    overall = comparison.rows[-1]
    assert (overall.n_a, overall.n_b) == (3, 3)
    assert overall.delta == 0.5  # graphrag 0.5 -> 1.0; bm25 and gold-evidence unchanged
    assert overall.paired is not None and overall.paired.mean == 0.5
    assert sorted(qid for qid, _, _ in comparison.changed) == [
        "conv1:event_ordering:0", "conv1:information_extraction:1"]
    assert not any("different systems" in w for w in comparison.warnings)

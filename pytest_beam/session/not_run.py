"""The questions a run selected and never got a result for, each named with why.

The controller knows what was selected: in one process the session's items after deselection,
under xdist each worker's collection (``pytest_xdist_node_collection_finished``). A selected item
no report reached (the run was interrupted or stopped by ``-x``, a worker crashed and was not
replaced, or died before its re-run) goes into the record's ``not_run`` with its reason, so the
record names every selected question and says it is partial; a merge of shards (``pytest-beam
merge``) can tell a question that did not run from one that was not selected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..data.sets import BenchmarkSet
    from ..results.question_record import NotRunQuestion
    from .item_reports import ReportedItem


def stop_reason(*, interrupted_by: str | None, exitstatus: int, stopped: str | None,
                workers_lost: Mapping[str, str]) -> str:
    """Why the run left questions it selected: a signal, pytest stopping (-x, --maxfail), xdist
    running out of workers, or an end nobody explained."""
    if interrupted_by:
        return f"interrupted ({interrupted_by})"
    if stopped:
        return f"the run stopped: {stopped}"
    if exitstatus == 2:
        return "interrupted"
    if workers_lost:
        lost = ", ".join(f"{worker} ({error})" for worker, error in workers_lost.items())
        return f"xdist replaced no more workers after {lost} crashed (--max-worker-restart)"
    return "no report of it reached the controller before the run ended"


def not_run(selected: Iterable[str], items: Mapping[str, ReportedItem], bench_set: BenchmarkSet,
            systems: list[str], reason: str) -> list[NotRunQuestion]:
    """Each selected item (by nodeid) with no verdict and no record, in the selected order; one
    whose worker crashed and whose re-run never came says so."""
    from ..data.ids import item_id_of_nodeid
    from ..results.question_record import NotRunQuestion

    questions = {q.id: q for q in bench_set.questions}
    out = []
    for nodeid in dict.fromkeys(selected):
        item = item_id_of_nodeid(nodeid)
        if item is None:
            continue
        entry = items.get(str(item))
        if entry is not None and (entry.outcome is not None or entry.record is not None):
            continue  # it has a result (an only-setup report becomes an error with NO_VERDICT)
        why = reason
        if entry is not None and entry.crashed is not None:
            why = f"its worker {entry.crashed.worker} crashed on it and the run ended before its re-run ({reason})"
        question = questions.get(str(item.question))
        out.append(NotRunQuestion(id=str(item.question), system=item.system or systems[0],
                                  conversation_id=question.conversation_id if question else "",
                                  ability=question.ability if question else "", reason=why))
    return out

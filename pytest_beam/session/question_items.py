"""Every selected BEAM question as a pytest item of the one test function in `suite.py`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import suite
from .plan import RunPlan
from .state import BeamSession

if TYPE_CHECKING:
    from _pytest.mark.structures import ParameterSet  # what pytest.param returns; not exported

    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet

SUITE_NODEID = "beam"
NO_MODEL_REASON = (
    "no model endpoint configured: set --beam-base-url and --beam-model (or BEAM_BASE_URL and "
    "BEAM_MODEL, or beam_base_url/beam_model in the ini file; the key goes in BEAM_API_KEY), or "
    "replay a cassette with --beam-record-mode=none --beam-cassette FILE --beam-model NAME"
)


def load_questions(plan: RunPlan) -> tuple[list[str], BenchmarkSet]:
    """The selected systems and the question set, at session start; a problem with either stops
    the run before any test (and before any model or Neo4j starts)."""
    from ..data.data_error import BeamDataError
    from ..data.sets import load_set
    from ..systems import UnknownSystem
    from .system_choice import custom_names, select_systems

    settings = plan.settings
    try:
        systems = select_systems(settings.system, custom_names(plan.config))
    except (UnknownSystem, ValueError) as exc:
        pytest.exit(f"pytest-beam: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    if not settings.dry_run and not getattr(plan.config.option, "collectonly", False):
        from ..systems import missing_extra

        missing = [line for name in systems if (line := missing_extra(name))]
        if missing:  # not as an error per question
            pytest.exit("pytest-beam: " + "; ".join(missing), returncode=pytest.ExitCode.USAGE_ERROR)
    try:
        bench_set = load_set(settings.mode, settings.data, settings.conversations,
                             keep_markers=settings.keep_markers, tier=settings.tier)
    except BeamDataError as exc:
        raise pytest.UsageError(f"pytest-beam: data source problem: {exc}") from None  # one line, exit 4
    return systems, bench_set


def add_question_items(session: BeamSession, pytest_session: pytest.Session, items: list[pytest.Item]) -> None:
    """The suite module's items go first, through pytest's own hooks (counts, -v, reports)."""
    module = pytest.Module.from_parent(pytest_session, path=Path(suite.__file__), nodeid=SUITE_NODEID)
    new = list(pytest_session.genitems(module))
    if not session.settings.model_configured and not session.settings.dry_run:
        for item in new:
            item.add_marker(pytest.mark.skip(reason=NO_MODEL_REASON))
    items[:0] = new


def parametrize(session: BeamSession, metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.nodeid.startswith(SUITE_NODEID + "::") and "beam_question" in metafunc.fixturenames:
        metafunc.parametrize(("beam_conversation", "beam_question"), question_params(session),
                             indirect=["beam_conversation"], scope="session")


def question_params(session: BeamSession) -> list[ParameterSet]:
    """One parameter per (system, question), systems outermost in their selected order."""
    from ..data.sets import lite_spec
    from .system_choice import SystemRun, bare_ids, param_id

    lite_ids = set(lite_spec()["questions"])
    bare = bare_ids(session.systems)
    params: list[ParameterSet] = []
    for system in session.systems:
        for q in session.bench_set.questions:
            # the conversation is the xdist group whatever the system: its data loads once per worker
            marks = [pytest.mark.beam, getattr(pytest.mark, q.ability),
                     pytest.mark.xdist_group(q.conversation_label)]
            if q.id in lite_ids:
                marks.append(pytest.mark.lite)
            if q.known_bad_rubric:
                # xfail covers the verdict only (outcome.check_outcome fails with pytest.fail); a dead
                # Neo4j or endpoint raises something else and stays an ERROR, as for any question
                marks += [pytest.mark.known_bad_rubric,
                          pytest.mark.xfail(reason=f"known bad rubric: {q.known_bad_rubric}", strict=False,
                                            raises=pytest.fail.Exception)]
            params.append(pytest.param(SystemRun(system, q.conversation_id, q.tier), q, id=param_id(system, q.id, bare),
                                       marks=marks))
    return params


def keep_shard(session: BeamSession, config: pytest.Config, items: list[pytest.Item]) -> None:
    """--beam-shard=K/N: the suite's items of the other shards' conversations are deselected, after
    -k, -m and --lf chose (so every shard starts from the same selection), and what the shard is
    goes to the run's results for the record: this shard's conversations, every shard's, and every
    item of the whole run, which `pytest-beam merge` holds the shards' records against."""
    spec = session.settings.shard
    if not spec:
        return
    from ..data.ids import item_id_of_nodeid
    from ..data.shards import assign, parse_shard
    from ..memory.chunking import chunk_documents
    from ..results.schema import ShardInfo

    shard = parse_shard(spec)
    documents = session.bench_set.documents
    order = list(documents)
    sizes = {c: len(chunk_documents(documents[c], session.settings.chunk_tokens)) for c in order}
    assignment = assign(sizes, order, shard.count)
    mine = set(assignment[shard.index - 1])
    run_questions: list[tuple[int, str]] = []
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        run = getattr(getattr(item, "callspec", None), "params", {}).get("beam_conversation")
        index = _suite_index(item)
        if index is None or run is None:
            keep.append(item)
            continue
        item_id = item_id_of_nodeid(item.nodeid)
        run_questions.append((index, str(item_id) if item_id is not None else item.nodeid))
        (keep if run.conversation_id in mine else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    session.results.shard = ShardInfo(index=shard.index, count=shard.count,
                                      conversations=list(assignment[shard.index - 1]),
                                      assignment=[list(a) for a in assignment],
                                      run_questions=[qid for _, qid in sorted(run_questions)])  # the run's order
    session.results.persist()  # an xdist worker's part carries it to the controller


def order_items(items: list[pytest.Item]) -> None:
    """The suite's items in their parameter order: each system's questions, conversation by conversation.

    pytest groups items by equal session-scoped parameters; a question is the same value under
    every system, so it would interleave the systems and tear down and ingest again a system's
    conversation between them. In parameter order each (system, conversation) run is contiguous:
    one instance, ingested once, closed after its last question. Other items keep their places.
    """
    keyed = [(index, n) for n, item in enumerate(items) if (index := _suite_index(item)) is not None]
    slots = [n for _, n in keyed]
    ordered = [items[n] for _, n in sorted(keyed, key=lambda pair: pair[0])]  # stable: equal indexes keep their order
    for n, item in zip(slots, ordered):
        items[n] = item


def _suite_index(item: pytest.Item) -> int | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None or "beam_question" not in callspec.params or not item.nodeid.startswith(SUITE_NODEID + "::"):
        return None
    return callspec.indices["beam_question"]


def selected_questions(pytest_session: pytest.Session) -> list[ProbingQuestion]:
    return [question for _, question in selected_pairs(pytest_session)]


def selected_pairs(pytest_session: pytest.Session) -> list[tuple[str, ProbingQuestion]]:
    """(system name, question) of every selected item, in item order."""
    from ..data.records import ProbingQuestion
    from .system_choice import SystemRun

    pairs: list[tuple[str, ProbingQuestion]] = []
    for item in pytest_session.items:
        if not (isinstance(item, pytest.Function) and hasattr(item, "callspec")):
            continue
        run, question = item.callspec.params.get("beam_conversation"), item.callspec.params.get("beam_question")
        if isinstance(run, SystemRun) and isinstance(question, ProbingQuestion):
            pairs.append((run.system, question))
    return pairs


DRY_RUN_LINE = "pytest-beam: dry run: no model called and no service started"


def check_estimate(session: BeamSession, pytest_session: pytest.Session, require_caps: bool = True) -> None:
    """After collection, on the controller: print the dry-run estimate (the run loop then runs
    nothing, see hooks), or refuse a run over the cap (`require_caps` False: no money spent)."""
    if session.is_worker:
        return
    pairs = selected_pairs(pytest_session)
    if not pairs or pytest_session.config.option.collectonly:
        return
    from .dry_run import estimate_systems, format_estimate, format_systems, over_cap, total_of
    from .system_choice import bare_ids

    settings = session.settings
    per_system = estimate_systems(session.bench_set, pairs, settings)
    single = next(iter(per_system.values())) if bare_ids(list(per_system)) else None
    if single is not None:  # the default system alone: its one table, as always
        estimate, text = single, format_estimate(single, settings)
    else:
        estimate, text = total_of(per_system), format_systems(per_system, settings)
    if settings.dry_run:
        from .endpoint import serving_line

        prompt = sum(p.prompt_tokens for p in estimate.phases.values())
        completion = sum(p.completion_tokens for p in estimate.phases.values())
        text += "\n" + serving_line(settings, prompt, completion)
        pytest_session.config.get_terminal_writer().line("\n" + text)
        pytest_session.config.get_terminal_writer().line(DRY_RUN_LINE)
        return
    if settings.model_configured and not settings.replaying:
        problem = over_cap(estimate, settings, require_caps=require_caps)
        if problem:
            raise pytest.UsageError(f"pytest-beam: {problem}")  # one line, exit 4

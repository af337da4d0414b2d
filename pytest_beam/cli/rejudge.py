"""``pytest-beam rejudge RUN``: score an earlier run's answers again, with no ingest and no agent call.

A new judge model or scoring profile should not cost a new ingest and a new agent run: the
answers are in the record. Each answered question is scored again from the BEAM data (its rubric)
with only the judge role of the model client; the new record points to the one it re-judged
(``rejudged_from``) and its meter shows judge calls only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..results.provenance import scoring_stamp
from ..results.schema import KNOWN_BAD_FLAG, QuestionRecord, RunRecord, UsageRow
from ..results.store import read_record, resolve_record_path, write_record
from ..run_id import new_run_id
from ..settings import Settings

__all__ = ["RejudgeError", "rejudge", "rejudge_question", "new_run_id"]

# Flags the scorer sets; every other flag (agent_failure, timeout, known_bad_rubric) is the answer's.
_SCORER_FLAGS = {"parse_error", "score_out_of_range", "tau_undefined"}


class RejudgeError(Exception):
    """Re-judging cannot start; the message says what is missing."""


def _outcome(score: float, known_bad: bool, pass_score: float) -> str:
    from ..scoring import passes

    passed = passes(score, pass_score)
    if known_bad:
        return "xpassed" if passed else "xfailed"
    return "passed" if passed else "failed"


def rejudge_question(old: QuestionRecord, probing: Any, judge: Any, *, profile: str, judge_runs: int,
                     pass_score: float) -> QuestionRecord:
    """One question scored again; a question with no answer (an error before it, a skip) is kept as
    it was. An error with an answer is one whose judging failed: its answer is scored now."""
    from ..scoring import score_question

    if old.answer is None or old.outcome == "skipped":
        return old.model_copy(update={"usage": {}, "trace": []})
    before = judge.meter.snapshot()
    started = time.monotonic()
    score = score_question(probing, old.answer, judge, mode=profile, judge_runs=judge_runs)
    used = judge.meter.since(before)
    kept = [f for f in old.flags if f not in _SCORER_FLAGS]
    flags = sorted(set(kept) | set(score.flags))
    # an agent that gave no answer scores 0 whatever the judge says, as in the run itself
    value = 0.0 if {"agent_failure", "timeout"} & set(flags) else score.score
    known_bad = KNOWN_BAD_FLAG in flags or bool(old.known_bad_reason)
    return old.model_copy(update={
        "score": value, "score_excluding_known_bad": None if known_bad else value,
        "event_f1": score.event_f1, "event_tau_norm": score.event_tau_norm, "flags": flags,
        "items": list(score.items),
        "event_detail": score.event_detail.model_dump(mode="json") if score.event_detail else None,
        "outcome": _outcome(value, known_bad, pass_score), "error": None, "scorer": profile,
        "usage": {role: UsageRow.model_validate(u.to_dict()) for role, u in used.items()},
        "seconds": time.monotonic() - started, "trace": [],
    })


def _judge_client(settings: Settings, judge_model: str) -> Any:
    from ..llm import EndpointConfig, Meter, ModelClient, ResponseCache, RoleModels

    if not settings.base_url:
        raise RejudgeError("no model endpoint: set --beam-base-url or BEAM_BASE_URL")
    return ModelClient(
        EndpointConfig(base_url=settings.base_url, api_key=settings.api_key, timeout_s=settings.timeout,
                       max_retries=settings.max_retries, concurrency=settings.concurrency),
        RoleModels(agent=judge_model, judge=judge_model), meter=Meter(),
        cache=ResponseCache(settings.cache) if settings.cache else None,
    )


def rejudge(record_path: str | os.PathLike[str], settings: Settings, *, judge_model: str | None = None,
            profile: str | None = None, results_dir: str | os.PathLike[str] | None = None,
            bench_questions: Mapping[str, Any] | None = None, client: Any = None) -> tuple[Path, RunRecord]:
    """Score the answers of the record at ``record_path`` again; write and return the new record.

    ``judge_model`` and ``profile`` default to the old record's; ``bench_questions`` (id ->
    ProbingQuestion) defaults to the BEAM data of the record's mode; ``client`` to a model client
    built from ``settings`` (endpoint, key, cache). The new record goes in ``results_dir`` (default:
    the folder holding the old record's run).
    """
    old_path = resolve_record_path(record_path)
    old = read_record(old_path)
    judge_model = judge_model or old.models.get("judge")
    if not judge_model:
        raise RejudgeError("no judge model: the record names none; give --beam-judge-model")
    profile = profile or old.profile or "default"
    scoring_stamp(profile)  # an unknown profile fails here, before any call
    if bench_questions is None:
        bench_questions = _load_questions(old, settings)
    missing = [q.id for q in old.questions if q.answer is not None and q.id not in bench_questions]
    if missing:
        raise RejudgeError(f"the BEAM data has no question {missing[0]} (of {len(missing)} missing)")
    judge = client or _judge_client(settings, judge_model)
    pass_score = old.pass_score if old.pass_score is not None else settings.pass_score
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    t0 = time.monotonic()
    questions = [rejudge_question(q, bench_questions.get(q.id), judge, profile=profile,
                                  judge_runs=settings.judge_runs, pass_score=pass_score) for q in old.questions]
    models = {**old.models, "judge": judge_model}
    record = RunRecord(
        run_id=new_run_id(), started=started, finished=time.strftime("%Y-%m-%dT%H:%M:%S"),
        package_version=old.package_version, commit=old.commit, dirty=old.dirty, lockfile_hash=old.lockfile_hash,
        mode=old.mode, data_source=old.data_source, data_revision=old.data_revision, scorer=profile,
        scoring=scoring_stamp(profile, settings.judge_runs), models=models,
        judge_is_agent=models.get("judge") == models.get("agent"),
        settings={**old.settings, "scorer": profile, "judge_model": judge_model, "judge_runs": settings.judge_runs},
        pass_score=pass_score, questions=questions, system=old.system, label=old.label,
        rejudged_from=old.run_id,
        usage={role: UsageRow.model_validate(u) for role, u in judge.meter.to_dict().items()},
        phase_seconds={"judge": time.monotonic() - t0}, exit_status=0,
        partial=old.partial, partial_reason=old.partial_reason, systems=old.systems,
    )
    if old.systems:  # each system's cells from its own new scores (ingest cost kept from the run)
        record = record.recompute()
    folder = Path(results_dir) if results_dir is not None else old_path.resolve().parent.parent
    path = write_record(folder / record.run_id, record, [])
    return path, record


def _load_questions(old: RunRecord, settings: Settings) -> dict[str, Any]:
    from ..data.sets import load_set

    data = settings.data
    if data is None and old.settings.get("data"):
        data = Path(old.settings["data"])  # the data the run itself read
    conversations = old.settings.get("conversations") if old.mode != "lite" else None
    bench = load_set(old.mode or "lite", data, conversations,  # type: ignore[arg-type]
                     tier=old.settings.get("tier") or "100K")
    return {q.id: q for q in bench.questions}

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
from typing import TYPE_CHECKING

from ..llm import Meter
from ..model_access import judge_only, open_client
from ..results.build import with_aggregates
from ..results.provenance import scoring_stamp
from ..results.question_record import QuestionRecord
from ..results.record_files import read_record, resolve_record_path, write_record
from ..results.schema import RunRecord
from ..run_id import new_run_id
from ..settings import Settings

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..llm import ModelClient
    from ..system import SystemAnswer

__all__ = ["RejudgeError", "rejudge", "rejudge_question"]


class RejudgeError(Exception):
    """Re-judging cannot start; the message says what is missing."""


def answer_of(old: QuestionRecord) -> SystemAnswer:
    """The system's answer as the record keeps it: its text, its own flags, what it retrieved."""
    from ..system import SystemAnswer

    return SystemAnswer(text=old.answer or "", retrieved_message_ids=set(old.retrieved_message_ids),
                        steps=old.agent_steps, flags=old.answer_flags, context_tokens=old.context_tokens)


def rejudge_question(old: QuestionRecord, probing: ProbingQuestion | None, judge: ModelClient, *, profile: str,
                     judge_runs: int, pass_score: float) -> QuestionRecord:
    """One question scored again, its record built by the run's own builder; a question with no answer
    (an error before it, a skip) is kept as it was. An error with an answer is one whose judging
    failed: its answer is scored now. An answer the system flagged as none scores 0 unjudged, as in
    the run."""
    from ..results.question_record import question_record
    from ..scoring.scorer import score_answer

    if old.answer is None or old.outcome == "skipped":
        return old.model_copy(update={"usage": {}, "trace": []})
    if probing is None:
        raise RejudgeError(f"the BEAM data has no question {old.id}")
    answer = answer_of(old)
    before = judge.meter.snapshot()
    started = time.monotonic()
    judged = score_answer(probing, answer.text, judge, profile, judge_runs, gave_no_answer=answer.gave_no_answer)
    new = question_record(probing, system=old.system, answer=answer, judged=judged, usage=judge.meter.since(before),
                          seconds={"judge": time.monotonic() - started}, pass_score=pass_score)
    return new.model_copy(update={"answer_changed": old.answer_changed})


def rejudge(record_path: str | os.PathLike[str], settings: Settings, *, judge_model: str | None = None,
            profile: str | None = None, results_dir: str | os.PathLike[str] | None = None,
            bench_questions: Mapping[str, ProbingQuestion] | None = None,
            client: ModelClient | None = None) -> tuple[Path, RunRecord]:
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
    if client is None and not settings.base_url:
        raise RejudgeError("no model endpoint: set --beam-base-url or BEAM_BASE_URL")
    judge = client or open_client(settings, meter=Meter(), roles=judge_only(judge_model))
    pass_score = old.pass_score if old.pass_score is not None else settings.pass_score
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    t0 = time.monotonic()
    questions = [rejudge_question(q, bench_questions.get(q.id), judge, profile=profile, judge_runs=settings.judge_runs,
                                  pass_score=pass_score) for q in old.questions]
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
        usage=judge.meter.snapshot(),
        phase_seconds={"judge": time.monotonic() - t0}, exit_status=0,
        partial=old.partial, partial_reason=old.partial_reason, systems=old.systems,
    )
    record = with_aggregates(record)  # each system's cells, too, from its own new scores (ingest cost kept)
    folder = Path(results_dir) if results_dir is not None else old_path.resolve().parent.parent
    path = write_record(folder / record.run_id, record, [])
    return path, record


def _load_questions(old: RunRecord, settings: Settings) -> dict[str, ProbingQuestion]:
    from ..data.sets import load_set

    data = settings.data
    if data is None and old.settings.get("data"):
        data = Path(old.settings["data"])  # the data the run itself read
    conversations = old.settings.get("conversations") if old.mode != "lite" else None
    bench = load_set(old.mode or "lite", data, conversations,  # type: ignore[arg-type]
                     tier=old.settings.get("tier") or "100K")
    return {q.id: q for q in bench.questions}

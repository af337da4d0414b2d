"""``pytest-beam judge-check``: the judge's calibration on a whole question set, as its own record.

No ingest and no agent: the cases come from the BEAM data's reference answers and rubrics
(:mod:`pytest_beam.scoring.calibration`) and go through the judge the run would use (its endpoint,
or the embedded model started here when none is set), with BEAM's prompts unchanged. The record
holds the check (``RunRecord.judge_check``); ``pytest-beam report`` prints it and ``--html`` shows it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..results.provenance import scoring_stamp
from ..results.schema import RunRecord
from ..settings import Settings

if TYPE_CHECKING:
    from ..llm import ModelClient
    from ..llm.embedded import EmbeddedModel
    from ..llm.meter import Usage

__all__ = ["JudgeCheckError", "progress_line", "run_judge_check_command"]


class JudgeCheckError(Exception):
    """The check cannot start; the message says what is missing."""


def _client(settings: Settings, judge_model: str,
            say: Callable[[str], None]) -> tuple[ModelClient, EmbeddedModel | None, Settings]:
    """(client, embedded model or None, settings as used): the endpoint's judge, else the embedded model."""
    import dataclasses

    from ..llm import Meter
    from ..model_access import EMBEDDED_DEFAULTS, judge_only, open_client

    embedded = None
    if not settings.base_url or judge_model == "local":
        from ..llm import embedded as embedded_model

        reason = embedded_model.unavailable_reason()
        if reason is not None:
            raise JudgeCheckError(f"no endpoint is set (--beam-base-url, BEAM_BASE_URL) and {reason}")
        embedded = embedded_model.EmbeddedModel()
        try:
            base_url, judge_model = embedded.start(progress=say)
        except embedded_model.EmbeddedModelError as exc:
            embedded.stop()
            raise JudgeCheckError(str(exc)) from None
        settings = dataclasses.replace(settings, base_url=base_url, api_key=None, model=judge_model,
                                       judge_model=judge_model, endpoint_identity=embedded_model.CACHE_IDENTITY,
                                       concurrency=EMBEDDED_DEFAULTS["concurrency"],
                                       timeout=EMBEDDED_DEFAULTS["timeout"])
    return open_client(settings, meter=Meter(), roles=judge_only(judge_model)), embedded, settings


def progress_line(done: int, total: int, seconds: float, usage: Usage) -> str:
    """Where a judge check stands, and the time left at the pace of its live calls.

    A case answered from the response cache costs nothing, so a pace taken over every case
    promised minutes for hours after a re-run (seen: "about 2 min left" with 75 minutes to go). Which of
    the cases left are cached is not known ahead, so the time left is an upper bound: every case
    left a live call, at the live calls' pace so far.
    """
    head = f"judge check: {done}/{total} cases judged"
    from_cache = usage.cached_calls + usage.replayed_calls
    if from_cache:
        head += f", {from_cache} of their calls from the response cache"
    if not usage.calls or done >= total:
        return head
    per_call = seconds / usage.calls
    calls_per_case = (usage.calls + from_cache) / done
    left = (total - done) * calls_per_case * per_call
    return f"{head}; {per_call:.0f} s a live call, so at most {left / 60:.0f} min left"


def run_judge_check_command(settings: Settings, *, judge_model: str | None, sample: int | None,
                            results_dir: Path, say: Callable[[str], None]) -> tuple[Path, RunRecord]:
    """Load the set of ``settings.mode``, judge its cases, write and return the record."""
    from .. import __version__
    from ..data.sets import load_set
    from ..results.provenance import data_revision, git_info, lockfile_hash
    from ..results.record_files import write_record
    from ..run_id import new_run_id
    from ..scoring.judge_check import run_judge_check

    scoring_stamp(settings.scorer)  # an unknown profile fails here, before any data or model
    judge_model = judge_model or settings.judge_model or settings.model
    if settings.base_url and not judge_model:
        raise JudgeCheckError("an endpoint is set but no judge model: give --beam-judge-model (or BEAM_MODEL)")
    bench = load_set(settings.mode, settings.data, settings.conversations)
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S")
    client, embedded, settings = _client(settings, judge_model or "local", say)
    try:
        t0 = time.monotonic()
        last = [t0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if done == total or now - last[0] >= 30:
                last[0] = now
                say(progress_line(done, total, now - t0, client.meter.total()))

        check = run_judge_check(bench.questions, bench.references, client, profile=settings.scorer,
                                judge_runs=settings.judge_runs, sample=sample, bar=settings.judge_bar,
                                fail_bar=settings.judge_fail_bar,
                                judge_model=client.models.for_role("judge"), progress=progress)
    finally:
        if embedded is not None:
            embedded.stop()
    usage = client.meter.total()
    root = Path.cwd()
    commit, dirty = git_info(root)
    record = RunRecord(
        run_id=new_run_id(), started=started_at, finished=time.strftime("%Y-%m-%dT%H:%M:%S"),
        package_version=__version__, commit=commit, dirty=dirty, lockfile_hash=lockfile_hash(root),
        mode=settings.mode, data_source=bench.source, data_revision=data_revision(bench.source), scorer=settings.scorer,
        scoring=scoring_stamp(settings.scorer, settings.judge_runs), models={"judge": check.judge_model},
        settings=settings.public_dict(), judge_check=check, usage={"judge check": usage},
        phase_seconds={"judge check": check.seconds}, exit_status=0, label=settings.label,
    )
    path = write_record(results_dir / record.run_id, record, [])
    return path, record

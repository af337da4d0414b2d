"""The run record: what one benchmark run leaves behind, as JSON-able pydantic models, and its I/O.

A results folder (``.beam/results/`` by default) holds one directory per run::

    .beam/results/
        NOTICE                  # the records and traces quote CC BY-SA 4.0 text (BEAM)
        latest                  # text file: the id of the newest run
        <run_id>/record.json    # RunRecord
        <run_id>/trace.jsonl.gz # gzip JSON lines: every model call and agent step

Trace lines are free-form dicts; the ones this package reads back are agent steps of a question::

    {"question_id": "conv17:information_extraction:0", "kind": "model" | "tool",
     "tool": ..., "arguments": {...}, "result_chars": 812, "message_ids": [...], "text": ...}

(other lines, e.g. ``{"kind": "call", "phase": "judge", ...}``, are kept in the file and ignored
by :func:`load_traces`).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "SCHEMA_VERSION",
    "RECORD_FILE",
    "TRACE_FILE",
    "NOTICE_FILE",
    "LATEST_FILE",
    "ROLES",
    "KNOWN_BAD_FLAG",
    "UsageRow",
    "ItemScore",
    "QuestionRecord",
    "AbilityStats",
    "OverallStats",
    "RunRecord",
    "RecordNotFound",
    "Listed",
    "aggregate",
    "write_record",
    "read_record",
    "resolve_record_path",
    "list_records",
    "load_traces",
    "normalize_step",
    "with_traces",
    "notice_text",
    "git_info",
    "lockfile_hash",
]

SCHEMA_VERSION = 1
RECORD_FILE = "record.json"
TRACE_FILE = "trace.jsonl.gz"
NOTICE_FILE = "NOTICE"
LATEST_FILE = "latest"
#: The roles a model plays (usage is keyed by these, or by phase names).
ROLES = ("extraction", "resolution", "agent", "judge", "embedding")
KNOWN_BAD_FLAG = "known_bad_rubric"

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]


class _Model(BaseModel):
    # Records written by a newer version may carry fields this one does not know: ignore them.
    model_config = ConfigDict(extra="ignore")


class UsageRow(_Model):
    """Model calls and their cost for one role or phase."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = Field(0.0, description="Wall (latency) seconds spent in these calls",
                           validation_alias=AliasChoices("seconds", "latency_s"))
    replayed_calls: int = Field(0, description="Calls answered from a cassette")
    cached_tokens: int = Field(0, description="Tokens of cached and replayed calls (recorded usage, not spent)")
    retries: int = 0
    errors: int = 0

    def __add__(self, other: UsageRow) -> UsageRow:
        return UsageRow(**{name: getattr(self, name) + getattr(other, name) for name in UsageRow.model_fields})

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ItemScore(_Model):
    """One rubric item as the judge scored it."""

    rubric_item: str
    score: float | None = None
    reason: str | None = None
    parsed: bool = True


class QuestionRecord(_Model):
    """One probing question of one run: its answer, scores, flags, usage and (optionally) trace."""

    id: str = Field(description='e.g. "conv17:information_extraction:0"')
    conversation_id: str = ""
    ability: str = ""
    index: int = 0
    question: str = ""
    answer: str | None = None
    score: float | None = Field(None, description="None when the question errored or was skipped")
    score_excluding_known_bad: float | None = Field(None, description="None for a known-bad-flagged question")
    event_f1: float | None = None
    event_tau_norm: float | None = None
    evidence_recall: float | None = Field(None, description="None for abstention questions (no source ids)")
    flags: list[str] = Field(default_factory=list)
    known_bad_reason: str | None = None
    items: list[ItemScore] = Field(default_factory=list)
    event_detail: dict[str, Any] | None = Field(
        None,
        description="event_ordering: answer_lines, alignment [{line, event, event_index}] (or matched: "
        "[event|None]), reference_order, answer_order, precision, recall, event_f1, tau_b, event_tau_norm",
    )
    outcome: Outcome = "passed"
    error: str | None = Field(None, description="The skip reason or the error summary")
    usage: dict[str, UsageRow] = Field(default_factory=dict, description="role -> usage")
    agent_steps: int = 0
    seconds: float = 0.0
    scorer: str | None = None
    source_message_ids: list[int] = Field(default_factory=list)
    retrieved_message_ids: list[int] = Field(default_factory=list)
    answer_changed: bool | None = Field(None, description="The answer differs from its snapshot (None: not compared)")
    trace: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Agent steps: {kind: model|tool, tool, arguments, result_chars, message_ids, text?}; "
        "may be empty here, always present in the trace file",
    )

    @property
    def known_bad(self) -> bool:
        return KNOWN_BAD_FLAG in self.flags or bool(self.known_bad_reason)

    @property
    def scored(self) -> bool:
        """Whether the question counts in the means: it has a score and neither errored nor was skipped."""
        return self.score is not None and self.outcome not in ("error", "skipped")

    @property
    def calls(self) -> int:
        """Model calls this question made, whether live, cached or replayed from a cassette."""
        return sum(u.calls + u.cached_calls + u.replayed_calls for u in self.usage.values())

    @property
    def agent_calls(self) -> int:
        agent = self.usage.get("agent")
        if agent is None:
            return self.agent_steps
        return agent.calls + agent.cached_calls + agent.replayed_calls


class AbilityStats(_Model):
    n: int = Field(0, description="Questions with a score (errors and skips are not counted here)")
    mean: float | None = None
    n_excluding_known_bad: int = 0
    mean_excluding_known_bad: float | None = None
    flags: dict[str, int] = Field(default_factory=dict)
    passed: int = Field(0, description="passed + xpassed")
    failed: int = Field(0, description="failed + xfailed")
    errors: int = 0
    skipped: int = 0


class OverallStats(_Model):
    n: int = 0
    mean: float | None = Field(None, description="Mean over every scored question")
    n_excluding_known_bad: int = 0
    mean_excluding_known_bad: float | None = None
    mean_of_abilities: float | None = Field(None, description="Unweighted mean of the ability means")
    errors: int = 0
    skipped: int = 0


class RunRecord(_Model):
    schema_version: int = SCHEMA_VERSION
    run_id: str
    started: str | None = None
    finished: str | None = None
    package_version: str | None = None
    commit: str | None = None
    dirty: bool | None = None
    lockfile_hash: str | None = None
    mode: str | None = None
    data_source: str | None = None
    data_revision: str | None = None
    scorer: str | None = None
    models: dict[str, str | None] = Field(default_factory=dict, description="role -> model name")
    judge_is_agent: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)
    pass_score: float | None = None
    questions: list[QuestionRecord] = Field(default_factory=list)
    abilities: dict[str, AbilityStats] = Field(default_factory=dict)
    overall: OverallStats = Field(default_factory=OverallStats)
    usage: dict[str, UsageRow] = Field(default_factory=dict, description="phase/role -> usage")
    phase_seconds: dict[str, float] = Field(default_factory=dict, description="ingest, agent, judge -> seconds")
    graph: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="conversation -> {entities_by_type, relations_by_type, chunks, empty_extractions, cache_hit, seconds}",
    )
    snapshot_changes: list[str] = Field(default_factory=list)
    partial: bool = False
    partial_reason: str | None = None
    exit_status: int | None = None

    @model_validator(mode="after")
    def _fill_aggregates(self) -> RunRecord:
        # A record built with questions but no aggregates gets them; given ones are kept as given.
        if self.questions and not self.abilities:
            self.abilities, self.overall = aggregate(self.questions)
        return self

    def recompute(self) -> RunRecord:
        """A copy with abilities and overall recomputed from the questions."""
        abilities, overall = aggregate(self.questions)
        return self.model_copy(update={"abilities": abilities, "overall": overall})

    def question(self, qid: str) -> QuestionRecord | None:
        for q in self.questions:
            if q.id == qid:
                return q
        return None


# ----------------------------------------------------------------------------- aggregation

def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(questions: Iterable[QuestionRecord]) -> tuple[dict[str, AbilityStats], OverallStats]:
    """Per-ability and overall means.

    Only questions with a score count (an error or a skip is counted apart, never as 0). The
    excluding mean leaves out questions flagged ``known_bad_rubric``. Each flag is counted once per
    question that carries it, errors and skips included.
    """
    by_ability: dict[str, list[QuestionRecord]] = {}
    for q in questions:
        by_ability.setdefault(q.ability, []).append(q)

    abilities: dict[str, AbilityStats] = {}
    all_scores: list[float] = []
    all_excl: list[float] = []
    errors = skipped = 0
    for ability in sorted(by_ability):
        qs = by_ability[ability]
        scores = [q.score for q in qs if q.scored]
        excl = [
            (q.score_excluding_known_bad if q.score_excluding_known_bad is not None else q.score)
            for q in qs
            if q.scored and not q.known_bad
        ]
        flags: dict[str, int] = {}
        for q in qs:
            for flag in sorted(set(q.flags)):
                flags[flag] = flags.get(flag, 0) + 1
        stats = AbilityStats(
            n=len(scores),
            mean=_mean(scores),  # type: ignore[arg-type]
            n_excluding_known_bad=len(excl),
            mean_excluding_known_bad=_mean(excl),  # type: ignore[arg-type]
            flags=dict(sorted(flags.items())),
            passed=sum(q.outcome in ("passed", "xpassed") for q in qs),
            failed=sum(q.outcome in ("failed", "xfailed") for q in qs),
            errors=sum(q.outcome == "error" for q in qs),
            skipped=sum(q.outcome == "skipped" for q in qs),
        )
        abilities[ability] = stats
        all_scores.extend(scores)  # type: ignore[arg-type]
        all_excl.extend(excl)  # type: ignore[arg-type]
        errors += stats.errors
        skipped += stats.skipped

    ability_means = [s.mean for s in abilities.values() if s.mean is not None]
    overall = OverallStats(
        n=len(all_scores),
        mean=_mean(all_scores),
        n_excluding_known_bad=len(all_excl),
        mean_excluding_known_bad=_mean(all_excl),
        mean_of_abilities=_mean(ability_means),
        errors=errors,
        skipped=skipped,
    )
    return abilities, overall


# ----------------------------------------------------------------------------- writing

_SECRET_KEY = re.compile(r"(api[_-]?key|secret|password|passwd|(^|_)token)$", re.IGNORECASE)


def _scrub(settings: dict[str, Any]) -> dict[str, Any]:
    """Never let a key-like setting's value reach a record (the settings layer drops it already)."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, str) and value and _SECRET_KEY.search(str(key)):
            out[key] = "<redacted>"
        elif isinstance(value, dict):
            out[key] = _scrub(value)
        else:
            out[key] = value
    return out


def _jsonable(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become None, paths and other objects strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, BaseModel):
        return _jsonable(value.model_dump(mode="json"))
    return str(value)


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def notice_text() -> str:
    return (
        "About the files in this folder\n"
        "==============================\n\n"
        "Run records (record.json), traces (trace.jsonl.gz), answer diffs and HTML reports in this\n"
        "folder quote material from the BEAM benchmark: the chat conversations, the probing\n"
        "questions and their rubrics, and text a model wrote about them.\n\n"
        "BEAM: \"Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in LLMs\",\n"
        "Mohammad Tavakoli et al., 2025 (arXiv:2510.27246), published by its authors on GitHub\n"
        "(mohammadtavakoli78/BEAM) and Hugging Face (Mohammadta/BEAM).\n\n"
        "That material is licensed under Creative Commons Attribution-ShareAlike 4.0 International\n"
        "(CC BY-SA 4.0), https://creativecommons.org/licenses/by-sa/4.0/ . If you share these files,\n"
        "or anything adapted from them, keep this attribution and share them under the same licence.\n\n"
        "The judge prompts used to score the answers are ported from the BEAM authors' code (MIT\n"
        "licence, as stated by the dataset's users).\n\n"
        "Written by pytest-beam.\n"
    )


def write_record(run_dir: str | os.PathLike[str], record: RunRecord, trace_lines: Iterable[dict[str, Any]] | None = None) -> Path:
    """Write ``record.json`` and ``trace.jsonl.gz`` into ``run_dir`` (each atomically).

    Also writes the results folder's ``NOTICE`` (CC BY-SA attribution) and its ``latest`` pointer
    (the parent of ``run_dir`` is the results folder). With ``trace_lines=None`` the trace file is
    built from the questions' ``trace`` steps. Returns the path of ``record.json``.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    results_dir = run_dir.parent

    if trace_lines is None:
        trace_lines = ({"question_id": q.id, **step} for q in record.questions for step in q.trace)
    # Compress into memory, then replace atomically: a half-written gzip never shows.
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        for line in trace_lines:
            gz.write(json.dumps(_jsonable(line), ensure_ascii=False, allow_nan=False).encode("utf-8"))
            gz.write(b"\n")
    _atomic_write_bytes(run_dir / TRACE_FILE, buf.getvalue())

    data = record.model_dump(mode="json")
    data["settings"] = _scrub(data.get("settings") or {})
    text = json.dumps(_jsonable(data), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    record_path = run_dir / RECORD_FILE
    _atomic_write_bytes(record_path, text.encode("utf-8"))

    _atomic_write_bytes(results_dir / NOTICE_FILE, notice_text().encode("utf-8"))
    _atomic_write_bytes(results_dir / LATEST_FILE, (run_dir.name + "\n").encode("utf-8"))
    return record_path


# ----------------------------------------------------------------------------- reading

class RecordNotFound(FileNotFoundError):
    """No record where one was asked for; the message names the path."""


def resolve_record_path(path: str | os.PathLike[str]) -> Path:
    """The ``record.json`` a path means: the file itself, a run dir, or a results dir (its latest)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        if (p / RECORD_FILE).is_file():
            return p / RECORD_FILE
        latest = p / LATEST_FILE
        if latest.is_file():
            run_id = latest.read_text(encoding="utf-8").strip()
            target = p / run_id / RECORD_FILE
            if run_id and target.is_file():
                return target
            raise RecordNotFound(f"no record at {target} (named by {latest})")
        raise RecordNotFound(f"no record at {p}: no {RECORD_FILE} and no {LATEST_FILE} pointer in it")
    raise RecordNotFound(f"no record at {p}: no such file or directory")


def read_record(path: str | os.PathLike[str]) -> RunRecord:
    """Load a record from a run dir, a ``record.json`` path, or a results dir (its latest run)."""
    target = resolve_record_path(path)
    try:
        return RunRecord.model_validate_json(target.read_bytes())
    except ValueError as exc:  # pydantic ValidationError is a ValueError
        raise ValueError(f"{target} is not a readable run record: {exc}") from exc


class Listed(NamedTuple):
    path: Path
    """The record.json."""
    record: RunRecord | None
    error: str | None


def list_records(results_dir: str | os.PathLike[str]) -> list[Listed]:
    """Every run under a results folder, oldest first (unreadable ones listed with their error)."""
    root = Path(results_dir)
    if not root.is_dir():
        raise RecordNotFound(f"no results folder at {root}")
    out: list[Listed] = []
    for path in sorted(root.glob(f"*/{RECORD_FILE}")):
        try:
            out.append(Listed(path, RunRecord.model_validate_json(path.read_bytes()), None))
        except (OSError, ValueError) as exc:
            out.append(Listed(path, None, str(exc).splitlines()[0]))
    out.sort(key=lambda e: ((e.record.started or "") if e.record else "", str(e.path)))
    return out


def iter_trace(run_dir: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    path = Path(run_dir) / TRACE_FILE
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                yield json.loads(line)


def normalize_step(step: dict[str, Any]) -> dict[str, Any]:
    """An agent step with a ``kind`` (the agent writes ``type``): model, tool, note, ..."""
    if "kind" in step or "type" not in step:
        return step
    return {"kind": step["type"], **{k: v for k, v in step.items() if k != "type"}}


def load_traces(run_dir: str | os.PathLike[str]) -> dict[str, list[dict[str, Any]]]:
    """Agent steps per question id, read from the run's trace file (empty when there is none).

    Understands both one line per step (``{"question_id"|"question": id, "kind": "model"|"tool", ...}``)
    and one line per answer (``{"question": id, "kind": "agent_trace", "steps": [...]}``).
    """
    out: dict[str, list[dict[str, Any]]] = {}
    if not (Path(run_dir) / TRACE_FILE).is_file():
        return out
    for line in iter_trace(run_dir):
        qid = line.get("question_id", line.get("question"))
        if not isinstance(qid, str):
            continue
        kind = line.get("kind", line.get("type"))
        if kind == "agent_trace" and isinstance(line.get("steps"), list):
            out.setdefault(qid, []).extend(normalize_step(s) for s in line["steps"] if isinstance(s, dict))
        elif kind in ("model", "tool", "note"):
            step = {k: v for k, v in line.items() if k not in ("question_id", "question", "phase")}
            out.setdefault(qid, []).append(normalize_step(step))
    return out


def with_traces(record: RunRecord, run_dir: str | os.PathLike[str]) -> RunRecord:
    """A copy whose questions with an empty ``trace`` get their steps from the trace file."""
    traces = load_traces(run_dir)
    if not traces:
        return record
    questions = [
        q.model_copy(update={"trace": traces[q.id]}) if not q.trace and q.id in traces else q
        for q in record.questions
    ]
    return record.model_copy(update={"questions": questions})


# ----------------------------------------------------------------------------- provenance

def git_info(root: str | os.PathLike[str]) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git work tree at ``root``; ``(None, None)`` when not a repo."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=20
        )
        if head.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    commit = head.stdout.strip() or None
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return commit, dirty


def _sha256(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


def lockfile_hash(root: str | os.PathLike[str]) -> str | None:
    """``"<source>:<sha256>"`` of the project's lock: uv.lock, poetry.lock, pylock.toml or
    requirements*.txt (the first that exists), else the output of ``pip freeze``
    (``"pip-freeze:<sha>"``); None when none of them can be read."""
    base = Path(root)
    for name in ("uv.lock", "poetry.lock", "pylock.toml"):
        p = base / name
        if p.is_file():
            return f"{name}:{_sha256([p.read_bytes()])}"
    reqs = sorted(base.glob("requirements*.txt"))
    if reqs:
        label = reqs[0].name if len(reqs) == 1 else "requirements*.txt"
        digest = _sha256(p.name.encode() + b"\0" + p.read_bytes() for p in reqs)
        return f"{label}:{digest}"
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "freeze", "--disable-pip-version-check"],
            capture_output=True, timeout=120,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    lines = sorted(line for line in out.stdout.decode("utf-8", "replace").splitlines() if line.strip())
    digest = _sha256(["\n".join(lines).encode()])
    return f"pip-freeze:{digest}"

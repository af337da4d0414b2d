"""A results folder on disk: writing a run's record and trace, reading and listing them back.

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
import io
import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeAlias

from pydantic import BaseModel

from ..files import atomic_write
from ..redaction import scrub_settings
from .question_record import RecordedStep
from .record_base import RECORD_FILE_CONTEXT
from .schema import LATEST_FILE, NOTICE_FILE, RECORD_FILE, TRACE_FILE, RunRecord

#: A line of a trace file: one event as a process of the run wrote it (a model call, an agent's
#: steps, a note). Open by nature: each event has its own fields, and a file read back may come
#: from another version; readers check the keys they use (:func:`normalize_step`).
TraceLine: TypeAlias = dict[str, Any]

__all__ = [
    "RecordNotFound", "Listed", "jsonable", "notice_text", "write_record", "read_record", "resolve_record_path",
    "list_records", "iter_trace", "load_traces", "normalize_step", "with_traces",
]


def jsonable(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become None, paths and other objects strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json"))
    return str(value)


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


def write_record(run_dir: str | os.PathLike[str], record: RunRecord,
                 trace_lines: Iterable[TraceLine] | None = None) -> Path:
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
            gz.write(json.dumps(jsonable(line), ensure_ascii=False, allow_nan=False).encode("utf-8"))
            gz.write(b"\n")
    atomic_write(run_dir / TRACE_FILE, buf.getvalue(), fsync=True)

    data = record.model_dump(mode="json")
    data["settings"] = scrub_settings(data.get("settings") or {})
    text = json.dumps(jsonable(data), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    record_path = run_dir / RECORD_FILE
    atomic_write(record_path, text, fsync=True)

    atomic_write(results_dir / NOTICE_FILE, notice_text(), fsync=True)
    atomic_write(results_dir / LATEST_FILE, run_dir.name + "\n", fsync=True)
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
        return RunRecord.model_validate_json(target.read_bytes(), context=RECORD_FILE_CONTEXT)
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
            record = RunRecord.model_validate_json(path.read_bytes(), context=RECORD_FILE_CONTEXT)
            out.append(Listed(path, record, None))
        except (OSError, ValueError) as exc:
            out.append(Listed(path, None, str(exc).splitlines()[0]))
    out.sort(key=lambda e: ((e.record.started or "") if e.record else "", str(e.path)))
    return out


def iter_trace(run_dir: str | os.PathLike[str]) -> Iterator[TraceLine]:
    path = Path(run_dir) / TRACE_FILE
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                yield json.loads(line)


def normalize_step(step: RecordedStep) -> RecordedStep:
    """An agent step with a ``kind`` (the agent writes ``type``): model, tool, note, ..."""
    if "kind" in step or "type" not in step:
        return step
    return {"kind": step["type"], **{k: v for k, v in step.items() if k != "type"}}


def load_traces(run_dir: str | os.PathLike[str]) -> dict[str, list[RecordedStep]]:
    """Agent steps per question id, read from the run's trace file (empty when there is none).

    Understands both one line per step (``{"question_id"|"question": id, "kind": "model"|"tool", ...}``)
    and one line per answer (``{"question": id, "kind": "agent_trace", "steps": [...]}``).
    """
    out: dict[str, list[RecordedStep]] = {}
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

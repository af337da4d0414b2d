"""``pytest-beam report``: print a record, list records, compare two, or write the HTML page.

The command line lives in :mod:`pytest_beam.cli`; this module does the work and returns an exit
status (0 ok, 2 a record or folder that is not there or not readable).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .compare import compare, drops_beyond
from .comparison_text import render_comparison
from .record_files import RecordNotFound, list_records, read_record, resolve_record_path, with_traces
from .schema import RunRecord
from .summary import render_listing, render_summary
from .text import fmt_delta

__all__ = ["DEFAULT_RESULTS", "default_results_dir", "find_record", "load", "run_report"]

DEFAULT_RESULTS = Path(".beam") / "results"


def default_results_dir() -> Path:
    """``$BEAM_RESULTS`` if set, else ``.beam/results`` (relative to the working directory)."""
    env = os.environ.get("BEAM_RESULTS")
    return Path(env) if env else DEFAULT_RESULTS


def find_record(arg: str | os.PathLike[str] | None, results_dir: str | os.PathLike[str]) -> Path:
    """The record.json meant by a command-line argument: a path (file, run dir or results dir), a
    run id inside ``results_dir``, or (None) the latest run in ``results_dir``."""
    results = Path(results_dir)
    if arg is None:
        return resolve_record_path(results)
    p = Path(arg)
    if p.exists():
        return resolve_record_path(p)
    if not p.is_absolute() and len(p.parts) == 1 and (results / p).exists():
        return resolve_record_path(results / p)
    raise RecordNotFound(f"no record at {p}" + ("" if p.is_absolute() else f" (nor a run {p} in {results})"))


def load(arg: str | os.PathLike[str] | None, results_dir: str | os.PathLike[str]) -> tuple[Path, RunRecord]:
    path = find_record(arg, results_dir)
    return path, read_record(path)


def run_report(
    records: Sequence[str] = (),
    *,
    results_dir: str | os.PathLike[str] | None = None,
    list_all: bool = False,
    html: str | os.PathLike[str] | None = None,
    force: bool = False,
    fail_on_drop: float | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print, list, compare or render; the exit status is 0, 2 (a record not there or unreadable,
    bad arguments) or, with ``fail_on_drop`` and two records, 1 when a drop passes the gate
    (see :func:`.compare.drops_beyond`)."""
    out = out or sys.stdout
    err = err or sys.stderr
    results = Path(results_dir) if results_dir is not None else default_results_dir()

    def fail(msg: str) -> int:
        print(f"pytest-beam report: {msg}", file=err)
        return 2

    if len(records) > 2:
        return fail(f"give at most two records (got {len(records)})")
    if fail_on_drop is not None and (len(records) != 2 or list_all):
        return fail("--fail-on-drop compares a baseline with a run: give two records, A (baseline) and B")
    if fail_on_drop is not None and fail_on_drop < 0:
        return fail(f"--fail-on-drop {fail_on_drop}: the threshold must be at least 0")
    try:
        if list_all:
            if records:
                return fail("--all lists the records of a results folder; give no record with it")
            entries = list_records(results)
            print(f"records in {results}:", file=out)
            for line in render_listing(entries):
                print(line, file=out)
            return 0
        loaded = [load(r, results) for r in records] if records else [load(None, results)]
    except RecordNotFound as exc:
        return fail(str(exc))
    except (OSError, ValueError) as exc:
        return fail(str(exc).splitlines()[0])

    if html is not None:
        from .html import render_html

        recs = [with_traces(rec, path.parent) for path, rec in loaded]
        page = render_html(recs[-1], recs[0], force=force) if len(recs) == 2 else render_html(recs[0])
        target = Path(html)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(page, encoding="utf-8")
        except OSError as exc:
            return fail(f"cannot write {target}: {exc}")
        print(f"wrote {target}", file=out)
        return 0

    if len(loaded) != 2:
        print(f"record: {loaded[0][0]}", file=out)
        for line in render_summary(loaded[0][1]):
            print(line, file=out)
        return 0
    a, b = loaded[0][1], loaded[1][1]
    cmp = compare(a, b)
    for line in render_comparison(a, b, force=force, comparison=cmp):
        print(line, file=out)
    if fail_on_drop is None:
        return 0
    if cmp.profile_mismatch and not force:
        return fail(f"--fail-on-drop: {cmp.profile_mismatch}; no gate on scores of different scales "
                    "(--force to gate anyway)")
    dropped = drops_beyond(cmp, fail_on_drop)
    print("", file=out)
    if dropped:
        for r in dropped:
            p = r.paired
            assert p is not None
            print(f"DROP: {r.ability} fell {fmt_delta(r.delta)} (95% interval of the delta "
                  f"[{p.low:+.3f}, {p.high:+.3f}], whose upper end is below -{fail_on_drop:g})", file=out)
        print(f"fail-on-drop {fail_on_drop:g}: {len(dropped)} drop(s) beyond the interval; exit status 1", file=out)
        return 1
    print(f"fail-on-drop {fail_on_drop:g}: no ability and not the overall mean dropped beyond its interval", file=out)
    return 0

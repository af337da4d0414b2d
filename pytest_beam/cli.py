"""The ``pytest-beam`` command (also ``python -m pytest_beam``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .scoring.judge_bars import DEFAULT_BAR, DEFAULT_FAIL_BAR, RIGHT_ANSWERS_FAILED

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-beam", description="Tools for pytest-beam run records.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    report = sub.add_parser(
        "report",
        help="print, list, compare or render run records",
        description=(
            "Print a run record as tables (default: the latest in the results folder); with two "
            "records, compare them side by side (deltas are B - A); --all lists the records; "
            "--html writes a self-contained HTML page of one record or of a comparison."
        ),
    )
    report.add_argument(
        "records", nargs="*", metavar="RECORD",
        help="a record.json, a run directory, a results folder (its latest run) or a run id in --results; "
             "give two (A B) to compare them",
    )
    report.add_argument("--results", metavar="DIR", default=None,
                        help="results folder (default: $BEAM_RESULTS or .beam/results)")
    report.add_argument("--all", dest="list_all", action="store_true", help="list the records in the results folder")
    report.add_argument("--html", metavar="OUT", default=None,
                        help="write the HTML page to OUT (one record, or A B: B compared with A)")
    report.add_argument("--force", action="store_true",
                        help="show (and gate on) deltas between records scored under different profiles or prompts")
    report.add_argument(
        "--fail-on-drop", metavar="T", type=float, default=None,
        help="with A B: exit 1 when any ability, or the overall mean, dropped by more than T beyond its "
             "interval, i.e. the upper end of the paired 95%% interval of B - A is below -T; else exit 0")
    rejudge = sub.add_parser(
        "rejudge",
        help="score an earlier run's answers again (no ingest, no agent call)",
        description=(
            "Score the answers of an earlier record again with the judge (a new judge model or scoring "
            "profile), with no ingest and no agent call; writes a new record that points to the one it "
            "re-judged. The endpoint comes from --beam-base-url or BEAM_BASE_URL, the key from BEAM_API_KEY "
            "(or OPENAI_API_KEY); every other beam setting from its BEAM_* variable."
        ),
    )
    rejudge.add_argument("run", metavar="RUN", help="a record.json, a run directory, or a run id in --results")
    rejudge.add_argument("--results", metavar="DIR", default=None,
                         help="results folder (default: $BEAM_RESULTS or .beam/results); the new record goes here")
    for name, meta, helptext in _REJUDGE_FLAGS:
        rejudge.add_argument("--beam-" + name.replace("_", "-"), dest=name, metavar=meta, default=None, help=helptext)
    install = sub.add_parser(
        "install-system",
        help="make the environment of an outside system that cannot share pytest-beam's (hindsight, cognee)",
        description=(
            "Hindsight and Cognee need openai < 3 and pytest-beam runs on openai 3, so each runs in a virtual "
            "environment of its own under pytest-beam's cache, as a child process whose model calls go through the "
            "harness's relay. This makes those environments with pip (their pinned requirements; several at once), "
            "so that a benchmark run downloads nothing. The in-process systems are extras: pip install "
            "'pytest-beam[lightrag]' and so on."
        ),
    )
    install.add_argument("names", nargs="+", metavar="NAME", help="hindsight, cognee")
    check = sub.add_parser(
        "judge-check",
        help="measure the judge on BEAM's own reference answers (agreement, false passes and fails, kappa)",
        description=(
            "Calibrate a judge with no ingest and no agent: every probing question's reference answer is judged "
            "against its own rubric items (expected pass), another question's reference, an empty and an 'I don't "
            "know' answer (expected fail, but 'I don't know' passes an abstention question), and event-ordering "
            "events against themselves and unrelated ones; BEAM's prompts unchanged. Prints agreement, false passes, "
            "false fails and Cohen's kappa per ability with 95% bootstrap intervals, and writes a record "
            "(pytest-beam report shows it; --html too). With no endpoint the embedded model judges. Every other "
            "beam setting comes from its BEAM_* variable."
        ),
    )
    check.add_argument("--results", metavar="DIR", default=None,
                       help="results folder for the record (default: $BEAM_RESULTS or .beam/results)")
    check.add_argument("--sample", metavar="N", type=int, default=None,
                       help="judge at most N cases, every kind represented (default: every case)")
    for name, meta, helptext in _CHECK_FLAGS:
        check.add_argument("--beam-" + name.replace("_", "-"), dest=name, metavar=meta, default=None, help=helptext)
    return parser


_REJUDGE_FLAGS = (
    ("judge_model", "M", "the judge model (default: the record's judge)"),
    ("scorer", "P", "the scoring profile: default, upstream or omnimemeval (default: the record's)"),
    ("judge_runs", "N", "judge every rubric item and event-ordering alignment N times (default 1)"),
    ("base_url", "URL", "OpenAI-compatible endpoint (default: BEAM_BASE_URL)"),
    ("data", "DIR", "BEAM data directory (default: BEAM_DATA, else the one the run read)"),
    ("cache", "DIR", "response cache directory, or 'off' (default: .beam/cache)"),
)


_CHECK_FLAGS = (
    ("mode", "M", "question set: lite, full or complete (default: BEAM_MODE, else lite)"),
    ("conversations", "IDS", "only these conversations of the full or complete set, e.g. 1,4,17"),
    ("data", "DIR", "BEAM data directory (default: BEAM_DATA, else Hugging Face)"),
    ("judge_model", "M", "the judge model (default: BEAM_JUDGE_MODEL, else BEAM_MODEL; none: the embedded model)"),
    ("base_url", "URL", "OpenAI-compatible endpoint (default: BEAM_BASE_URL; none: the embedded model)"),
    ("scorer", "P", "the scoring profile: default, upstream or omnimemeval"),
    ("judge_runs", "N", "judge every case N times; a case passes when most runs pass it"),
    ("judge_bar", "K", f"the Cohen's kappa under which the judge is reported below the bar (default {DEFAULT_BAR})"),
    ("judge_fail_bar", "F", f"the share of {RIGHT_ANSWERS_FAILED} above which the judge is reported below the "
                            f"bar (default {DEFAULT_FAIL_BAR})"),
    ("cache", "DIR", "response cache directory, or 'off' (default: .beam/cache)"),
)


def _judge_check(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from .data.errors import BeamDataError
    from .results.judge_check_run import JudgeCheckError, run_judge_check_command
    from .results.report import default_results_dir
    from .settings import SettingsError, resolve

    flags = {name: getattr(args, name) for name, _, _ in _CHECK_FLAGS}
    if args.sample is not None and args.sample < 1:
        print("pytest-beam judge-check: --sample must be 1 or more", file=sys.stderr)
        return 2
    try:
        settings = resolve(lambda name: flags.get(name), lambda name: None, dict(os.environ))
        path, record = run_judge_check_command(
            settings, judge_model=flags["judge_model"] or os.environ.get("BEAM_JUDGE_MODEL") or None,
            sample=args.sample, results_dir=Path(args.results or default_results_dir()),
            say=lambda line: print(line, flush=True))
    except (SettingsError, JudgeCheckError, BeamDataError, ValueError) as exc:
        print(f"pytest-beam judge-check: {exc}", file=sys.stderr)
        return 2
    from .results.judge_check_text import render_judge_check

    assert record.judge_check is not None
    for line in render_judge_check(record.judge_check):
        print(line)
    print(f"record: {path}")
    return 0


def _rejudge(args: argparse.Namespace) -> int:
    import os

    from .results.rejudge import RejudgeError, rejudge
    from .results.report import default_results_dir, find_record
    from .results.store import RecordNotFound
    from .settings import SettingsError, resolve

    results = args.results or default_results_dir()
    flags = {name: getattr(args, name) for name, _, _ in _REJUDGE_FLAGS}
    try:
        settings = resolve(lambda name: flags.get(name), lambda name: None, dict(os.environ))
        path, record = rejudge(find_record(args.run, results), settings,
                               judge_model=flags["judge_model"] or os.environ.get("BEAM_JUDGE_MODEL") or None,
                               profile=flags["scorer"] or os.environ.get("BEAM_SCORER") or None,
                               results_dir=args.results)
    except (RecordNotFound, SettingsError, RejudgeError, ValueError) as exc:
        print(f"pytest-beam rejudge: {exc}", file=sys.stderr)
        return 2
    from .results.summary import render_summary

    for line in render_summary(record):
        print(line)
    print(f"record: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.command == "report":
        from .results.report import run_report

        if len(args.records) > 2:
            parser.exit(2, f"pytest-beam report: give at most two records (got {len(args.records)})\n")
        return run_report(args.records, results_dir=args.results, list_all=args.list_all, html=args.html,
                          force=args.force, fail_on_drop=args.fail_on_drop)
    if args.command == "rejudge":
        return _rejudge(args)
    if args.command == "judge-check":
        return _judge_check(args)
    if args.command == "install-system":
        from .systems.own_env import main as own_env_main

        return own_env_main(["install", *args.names])
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``pytest-beam`` command (also ``python -m pytest_beam``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..settings import OPTION_BY_NAME, flag_arguments

__all__ = ["main", "build_parser", "CHECK_OPTIONS", "REJUDGE_OPTIONS"]

# Each command's `--beam-*` options: the settings' own, offered as pytest offers them (their help is
# settings.OPTIONS'), with what the command does when one is not given, where that is not the option's default.
REJUDGE_OPTIONS: Mapping[str, str | None] = {
    "judge_model": "here: the record's judge unless given",
    "scorer": "here: the record's profile unless given",
    "judge_runs": None,
    "base_url": None,
    "data": "here: BEAM_DATA, else the data the run read",
    "cache": None,
}
CHECK_OPTIONS: Mapping[str, str | None] = {
    "mode": None,
    "conversations": None,
    "data": None,
    "judge_model": "here: BEAM_JUDGE_MODEL, else BEAM_MODEL; with neither and no endpoint, the embedded model",
    "base_url": "here: with none, the embedded model judges",
    "scorer": None,
    "judge_runs": "here: a case passes when most runs pass it",
    "judge_bar": None,
    "judge_fail_bar": None,
    "cache": None,
}


def add_setting_options(parser: argparse.ArgumentParser, options: Mapping[str, str | None]) -> None:
    """The settings' options a command takes, each under its flag, with its help and default from the table."""
    for name, note in options.items():
        option = OPTION_BY_NAME[name]
        kwargs = flag_arguments(option)
        said = note or (f"default {option.default}" if option.default is not None else None)
        kwargs["help"] += f" ({said})" if said else ""
        parser.add_argument(option.flag_name, dest=name, default=None, **kwargs)


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
    add_setting_options(rejudge, REJUDGE_OPTIONS)
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
    add_setting_options(check, CHECK_OPTIONS)
    merge = sub.add_parser(
        "merge",
        help="join the records of a run's shards (--beam-shard=K/N) into one record",
        description=(
            "Join the records of one run's shards into one record, as if one machine had run it: every "
            "question once, usage added up, the means and their intervals over all the conversations. "
            "Refuses records that are not shards of one run (commit, data revision, scoring profile, question "
            "selection, or a setting that shapes requests or scores differs), naming the difference; names the "
            "questions no record holds (a shard absent). A question that errored in one record and has a verdict "
            "in a later one (the shard run again with --lf) is taken from the later."
        ),
    )
    merge.add_argument("runs", nargs="+", metavar="RUN",
                       help="a shard's record.json or run directory (or a run id in --results)")
    merge.add_argument("--results", metavar="DIR", default=None,
                       help="where run ids are looked up (default: $BEAM_RESULTS or .beam/results)")
    merge.add_argument("--out", metavar="DIR", default=None,
                       help="results folder the merged record goes into (default: --results)")
    merge.add_argument("--html", action="store_true", help="also write the merged record's HTML page")
    return parser


def _merge(args: argparse.Namespace) -> int:
    from ..results.merge import MergeError, merge_records, write_merged
    from ..results.record_files import RecordNotFound, read_record
    from ..results.report import default_results_dir, find_record
    from ..results.summary import render_summary
    from ..run_id import new_run_id

    results = args.results or default_results_dir()
    try:
        paths = [find_record(run, results) for run in args.runs]
        merged = merge_records([(str(path.parent), read_record(path)) for path in paths], new_run_id())
    except (RecordNotFound, MergeError, ValueError) as exc:
        print(f"pytest-beam merge: {exc}", file=sys.stderr)
        return 2
    for line in render_summary(merged.record):
        print(line)
    for note in merged.notes:
        print(f"merge: {note}")
    if merged.missing:
        shown = ", ".join(merged.missing[:20]) + (f" and {len(merged.missing) - 20} more" if len(merged.missing) > 20
                                                  else "")
        print(f"merge: {len(merged.missing)} of the run's questions are in no record: {shown}")
    path = write_merged(merged, Path(args.out or results), [p.parent for p in paths], html=args.html)
    print(f"record: {path}")
    return 1 if merged.missing else 0


def _judge_check(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from ..data.data_error import BeamDataError
    from ..results.report import default_results_dir
    from ..setting_sources import resolve
    from ..settings import SettingsError
    from .judge_check_command import JudgeCheckError, run_judge_check_command

    flags = {name: getattr(args, name) for name in CHECK_OPTIONS}
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
    from ..results.calibration_table import render_judge_check

    assert record.judge_check is not None
    for line in render_judge_check(record.judge_check):
        print(line)
    print(f"record: {path}")
    return 0


def _rejudge(args: argparse.Namespace) -> int:
    import os

    from ..results.record_files import RecordNotFound
    from ..results.report import default_results_dir, find_record
    from ..setting_sources import resolve
    from ..settings import SettingsError
    from .rejudge import RejudgeError, rejudge

    results = args.results or default_results_dir()
    flags = {name: getattr(args, name) for name in REJUDGE_OPTIONS}
    try:
        settings = resolve(lambda name: flags.get(name), lambda name: None, dict(os.environ))
        path, record = rejudge(find_record(args.run, results), settings,
                               judge_model=flags["judge_model"] or os.environ.get("BEAM_JUDGE_MODEL") or None,
                               profile=flags["scorer"] or os.environ.get("BEAM_SCORER") or None,
                               results_dir=args.results)
    except (RecordNotFound, SettingsError, RejudgeError, ValueError) as exc:
        print(f"pytest-beam rejudge: {exc}", file=sys.stderr)
        return 2
    from ..results.summary import render_summary

    for line in render_summary(record):
        print(line)
    print(f"record: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.command == "report":
        from ..results.report import run_report

        if len(args.records) > 2:
            parser.exit(2, f"pytest-beam report: give at most two records (got {len(args.records)})\n")
        return run_report(args.records, results_dir=args.results, list_all=args.list_all, html=args.html,
                          force=args.force, fail_on_drop=args.fail_on_drop)
    if args.command == "rejudge":
        return _rejudge(args)
    if args.command == "judge-check":
        return _judge_check(args)
    if args.command == "merge":
        return _merge(args)
    if args.command == "install-system":
        from ..systems.own_env import main as own_env_main

        return own_env_main(["install", *args.names])
    parser.print_help(sys.stderr)
    return 2

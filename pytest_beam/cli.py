"""The ``pytest-beam`` command (also ``python -m pytest_beam``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.command == "report":
        from .results.report import run_report

        if len(args.records) > 2:
            parser.exit(2, f"pytest-beam report: give at most two records (got {len(args.records)})\n")
        return run_report(args.records, results_dir=args.results, list_all=args.list_all, html=args.html,
                          force=args.force, fail_on_drop=args.fail_on_drop)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Known infrastructure errors as one short, complete line per question.

An endpoint that went down, a Neo4j that cannot start or died, BEAM data that is missing, a full
disk: the harness knows these, and their message already names the cause and the fix. Their traceback
(the harness's own frames, ~95 lines) helps nobody, and pytest's short summary cuts the message
off at the terminal's width. So the report of such a question carries the message alone (its
first line, with a note when there is more), unless `--tb=long` or `--full-trace` asks for all
of it; the terminal summary then lists each distinct line once, uncut.
"""

from __future__ import annotations

from collections import Counter

import pytest

ATTRIBUTE = "beam_problem"  # on the report; plain data, so xdist carries it to the controller


def known_problem(exc: BaseException | None) -> BaseException | None:
    """The known infrastructure error in `exc`'s chain (its causes and contexts), if any."""
    from ..data.data_error import BeamDataError
    from ..files import disk_full
    from ..llm.errors import CassetteError, CassetteMiss, ModelEndpointError
    from ..services.base import Neo4jServiceError

    known = (ModelEndpointError, CassetteMiss, CassetteError, Neo4jServiceError, BeamDataError)
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, known) or disk_full(exc):  # a full disk: "No space left on device: PATH"
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


LINE_CHARS = 300  # lines are joined up to about this length; a longer tail (a log) is left to --tb=long


def problem_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()] or [type(exc).__name__]
    kept = [lines[0]]
    for line in lines[1:]:
        if len(" ".join(kept)) + len(line) > LINE_CHARS:
            break
        kept.append(line)
    rest = len(lines) - len(kept)
    return " ".join(kept) + (f" [{rest} more line{'s' if rest > 1 else ''} with --tb=long]" if rest else "")


def shorten(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """Replace a known error's traceback by its one line (the summary's message as well)."""
    if not report.failed or call.excinfo is None:
        return
    option = item.config.option
    if getattr(option, "tbstyle", "auto") == "long" or getattr(option, "fulltrace", False):
        return
    exc = known_problem(call.excinfo.value)
    if exc is None:
        return
    line = f"{type(exc).__name__}: {problem_line(exc)}"  # the type stays: the record's error is filtered on it
    longrepr = call.excinfo.getrepr(style="value", chain=False)
    longrepr.reprtraceback.reprentries[-1].lines = [line]
    longrepr.reprtraceback.extraline = None
    if longrepr.reprcrash is not None:  # always there for a raised exception
        longrepr.reprcrash.message = line  # what -rE / -ra print after the node id
    report.longrepr = longrepr
    setattr(report, ATTRIBUTE, line)


def write_section(terminalreporter: pytest.TerminalReporter) -> None:
    """Each distinct problem once, uncut, with how many questions it stopped."""
    counts: Counter[str] = Counter()
    for key in ("error", "failed"):
        for report in terminalreporter.stats.get(key, []):
            line = getattr(report, ATTRIBUTE, None)
            if line:
                counts[line] += 1
    if not counts:
        return
    total = sum(counts.values())
    terminalreporter.write_sep("=", f"pytest-beam: {total} question{'s' if total > 1 else ''} could not run")
    for line, n in counts.most_common():
        terminalreporter.write_line(f"{n} x {line}")

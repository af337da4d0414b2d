"""Answers as syrupy snapshots: one readable text file per question under `<rootdir>/snapshots/`.

Files are named by question id (`conv17__information_extraction__0.txt`), not by syrupy's
test-module convention, so a diff reads as "this question's answer changed". A side effect we
want: syrupy cannot relate these files to the one test function, so a lite run never reports the
full set's snapshots as unused (nor deletes them on --snapshot-update).

Each system keeps its own: the built-in `graphrag` in `snapshots/` itself (the paths every run
before system comparison wrote), any other system in `snapshots/<system>/`, so two systems in
one project never overwrite each other's answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension
from syrupy.location import PyTestLocation

from ..system_registry import DEFAULT_SYSTEM

if TYPE_CHECKING:
    from _pytest.python import CallSpec2  # the type of pytest.Function.callspec, not exported


def snapshot_filename(question_id: str) -> str:
    """`conv17:information_extraction:0` -> `conv17__information_extraction__0`, and
    `500K/conv3:summarization:0` -> `500K__conv3__summarization__0` (no ':' or '/' in names)."""
    from ..data.ids import parse_question_id

    question = parse_question_id(question_id)
    return question.filename if question is not None else question_id.replace("/", "__").replace(":", "__")


class AnswerSnapshotExtension(SingleFileSnapshotExtension):
    """One ``.txt`` file per answer, holding the answer as UTF-8 text.

    syrupy's single-file extension stores bytes; its text mode is a private attribute
    (``_write_mode``), so instead the public ``serialize`` hook turns the answer into its UTF-8
    bytes: the file is the same readable text, and no private name of syrupy is relied on.
    """

    file_extension = "txt"

    def serialize(self, data: Any, **kwargs: Any) -> bytes:
        return str(data).encode("utf-8")

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(snapshot_dir(test_location.item.config.rootpath, _system_of(test_location)))

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        return cls.dirname(test_location=test_location)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index=0) -> str:
        from ..data.records import ProbingQuestion

        callspec = _callspec(test_location)
        question = callspec.params.get("beam_question")
        return snapshot_filename(question.id if isinstance(question, ProbingQuestion) else callspec.id)


def _system_of(test_location: PyTestLocation) -> str:
    run = _callspec(test_location).params.get("beam_conversation")
    return getattr(run, "system", None) or DEFAULT_SYSTEM



def snapshot_dir(rootdir: Path, system: str | None = None) -> Path:
    """`snapshots/` for graphrag (or no system named), `snapshots/<system>/` for any other."""
    base = Path(rootdir) / "snapshots"
    return base if system in (None, DEFAULT_SYSTEM) else base / system


def snapshot_path(rootdir: Path, question_id: str, system: str | None = None) -> Path:
    return snapshot_dir(rootdir, system) / f"{snapshot_filename(question_id)}.txt"


def _callspec(test_location: PyTestLocation) -> CallSpec2:
    """The item's parameters: a BEAM item is always a parametrized test function."""
    item = test_location.item
    if not isinstance(item, pytest.Function):
        raise TypeError(f"{item.nodeid} is not a parametrized test: no BEAM question names its snapshot")
    return item.callspec

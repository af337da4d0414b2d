"""The session has one owner, built complete (issue 28 point 3): the plan at configure, the session at
session start with every part, the run's settings decided once and shared by every part, and nothing
heavy imported or started by a run that asks no question."""

from __future__ import annotations

import json

import pytest

CONFTEST = """
import json, sys
from pytest_beam.session import BeamSession, RunPlan, get_session

SEEN = {}


def pytest_configure(config):
    SEEN["at_configure"] = get_session(config) is None  # the plan only: the session starts later


def pytest_collection_finish(session):
    beam = get_session(session.config)
    parts = {name: type(getattr(beam, name)).__name__ for name in
             ("plan", "endpoint", "terminate", "say", "models", "results", "graphs", "conversations", "questions")}
    shared = [beam.models.settings, beam.results.settings, beam.graphs.settings, beam.conversations.settings,
              beam.questions.settings]
    json.dump({**SEEN, "session": type(beam).__name__, "plan": isinstance(beam.plan, RunPlan), "parts": parts,
               "settings_shared": all(s is beam.settings for s in shared),
               "systems": beam.systems, "questions": len(beam.bench_set.questions),
               "heavy": sorted(m for m in ("openai", "neo4j") if m in sys.modules),
               "run_dir": beam.run_dir.exists()}, open("owner.json", "w"))
"""


@pytest.mark.parametrize("stage", ["--collect-only", "--beam-dry-run"])
def test_the_session_is_complete_at_session_start_and_starts_nothing(pytester, beam_data_dir, stage):
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
                                           f"--beam-data={beam_data_dir}", "--beam-system=graphrag,bm25", stage)
    assert result.ret == 0, result.outlines[-20:]
    seen = json.loads((pytester.path / "owner.json").read_text())
    assert seen["at_configure"] and seen["session"] == "BeamSession" and seen["plan"]
    assert seen["parts"] == {"plan": "RunPlan", "endpoint": "RunEndpoint", "terminate": "TerminateAsInterrupt",
                             "say": "ProgressLines", "models": "ModelSide", "results": "RunResults",
                             "graphs": "GraphServices", "conversations": "Conversations", "questions": "QuestionStep"}
    assert seen["settings_shared"] and seen["systems"] == ["graphrag", "bm25"] and seen["questions"] == 2
    assert seen["heavy"] == [] and seen["run_dir"] is False  # no model client, no driver, no run folder


def test_the_run_settings_are_frozen_and_the_session_never_replaces_them():
    from dataclasses import FrozenInstanceError

    from pytest_beam.session.plan import RunPlan
    from pytest_beam.session.state import BeamSession

    for cls in (RunPlan, BeamSession):
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    plan = RunPlan(config=None, settings=None, worker_id=None, run_id="r", run_dir=None)  # type: ignore[arg-type]
    with pytest.raises(FrozenInstanceError):
        plan.settings = None  # type: ignore[misc]

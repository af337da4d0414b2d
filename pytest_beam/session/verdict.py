"""From a question's record to pytest's verdict: user properties, the snapshot, pass or fail."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from ..scoring.scores import passes

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from ..results.question_record import QuestionRecord
    from ..settings import Settings

RecordProperty = Callable[[str, object], None]

PROPERTY_PREFIX = "beam_"
RESULT_PROPERTY = PROPERTY_PREFIX + "result"  # the question's record, as JSON: its one road to the controller


def record_unjudged(result: QuestionRecord, user_properties: list[tuple[str, object]]) -> None:
    """An answer whose judging failed (the question errors): its record without a score goes on
    the item, so the run keeps the answer and what it cost, for ``rejudge`` to score later."""
    _record(result, lambda name, value: user_properties.append((name, value)))


def check_outcome(result: QuestionRecord, settings: Settings, config: pytest.Config,
                  user_properties: list[tuple[str, object]], snapshot: SnapshotAssertion) -> None:
    """Properties go straight onto the item: JUnit XML writes them under any junit_family,
    and `record_property` would warn under the default xunit2."""

    def record_property(name: str, value: object) -> None:
        user_properties.append((name, value))

    changed, diff, snapshot_failure = _snapshot(result, config, snapshot, settings.snapshot)
    result = result.model_copy(update={"answer_changed": changed, "answer_diff": diff})
    _record(result, record_property)
    if snapshot_failure:
        pytest.fail(snapshot_failure, pytrace=False)
    if result.gave_no_answer:
        pytest.fail(f"{result.id}: the agent gave no answer ({', '.join(result.flags)}); scored 0", pytrace=False)
    assert result.score is not None  # judged: an answer whose judging failed went to record_unjudged
    if not passes(result.score, settings.pass_score):
        lines = [f"{result.id}: score {result.score:.3f} < pass score {settings.pass_score}"]
        lines += [f"  [{i.score}] {i.rubric_item} — {i.reason}" for i in result.items]
        if result.event_f1 is not None:
            lines.append(f"  event_f1={result.event_f1:.3f} event_tau_norm={result.event_tau_norm:.3f}")
        pytest.fail("\n".join(lines), pytrace=False)


def _record(result: QuestionRecord, record_property: RecordProperty) -> None:
    """Metrics as user properties: JUnit XML carries them; the record itself, as JSON, rides along
    to the controller (xdist copies user properties there)."""
    for key in ("score", "score_excluding_known_bad", "event_f1", "event_tau_norm", "evidence_recall"):
        value = getattr(result, key)
        if value is not None:
            record_property(key, round(float(value), 6))
    if result.flags:
        record_property("flags", ",".join(result.flags))
    for n, item in enumerate(result.items):
        record_property(f"item_{n}", json.dumps({"score": item.score, "reason": item.reason}))
    # Tokens paid live, and apart the calls and tokens served from the cache or a cassette: a
    # replayed question has no live tokens, which is not the same as a question that cost nothing.
    total = {"prompt_tokens": 0, "completion_tokens": 0, "cached_calls": 0, "replayed_calls": 0, "cached_tokens": 0}
    for usage in result.usage.values():
        for key in total:
            total[key] += int(getattr(usage, key) or 0)
    record_property("calls", result.calls)  # live, cached and replayed, as the record counts
    for key, value in total.items():
        if value or key in ("prompt_tokens", "completion_tokens"):
            record_property(key, value)
    record_property("agent_steps", result.agent_steps)
    record_property(RESULT_PROPERTY, result.run_json())


def _snapshot(result: QuestionRecord, config: pytest.Config, snapshot: SnapshotAssertion,
              mode: str) -> tuple[bool | None, str | None, str | None]:
    """(changed, diff, failure): `assert` fails on a changed answer; `report` only notes it;
    `off` does nothing."""
    if mode == "off":
        return None, None, None
    from .answer_snapshots import AnswerSnapshotExtension, snapshot_path

    text = (result.answer or "").rstrip("\n") + "\n"
    updating = bool(config.getoption("update_snapshots", False))
    path = snapshot_path(config.rootpath, result.id, result.system)
    old = path.read_text(encoding="utf-8") if path.exists() else None
    diff = None
    if old is not None and old != text:
        diff = "".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                            f"snapshot {path.name}", "this run's answer"))
    if mode == "assert" or updating:
        # syrupy's own comparison, so --snapshot-update writes and its report counts the check
        matched = snapshot(extension_class=AnswerSnapshotExtension) == text
        failure = None
        if not matched and not updating:
            why = diff or f"no snapshot at {path} (run once with --snapshot-update to create it)"
            failure = f"{result.id}: the answer differs from its snapshot\n{why}"
        return (old is not None and old != text), diff, failure
    if old is None:
        return None, None, None
    return old != text, diff, None

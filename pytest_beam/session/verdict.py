"""From a question's outcome to pytest's verdict: user properties, the snapshot, pass or fail."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from ..scoring.scores import passes
from .question_step import NO_ANSWER_FLAGS

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from ..results.schema import QuestionRecord
    from .question_step import Outcome
    from .state import BeamSession

RecordProperty = Callable[[str, object], None]

PROPERTY_PREFIX = "beam_"


def question_record(outcome: Outcome) -> QuestionRecord:
    """The one typed result of one question, carried to the controller and into the record."""
    from ..results.schema import ItemScore, QuestionRecord, UsageRow

    q, answer, score = outcome.question, outcome.answer, outcome.score
    flags = sorted(set(answer.flags) | set(score.flags if score is not None else ())
                   | ({"known_bad_rubric"} if q.known_bad_rubric else set()))
    if score is None:  # answered, but judging it failed: no score, the answer kept
        value, detail = None, {}
    else:
        value = 0.0 if NO_ANSWER_FLAGS & set(answer.flags) else score.score
        detail = score.model_dump(mode="json") if hasattr(score, "model_dump") else dict(score.__dict__)
    return QuestionRecord(
        id=q.id, conversation_id=q.conversation_id, ability=q.ability, index=q.index,
        question=q.question, answer=answer.text, score=value,
        score_excluding_known_bad=None if q.known_bad_rubric else value,
        event_f1=detail.get("event_f1"), event_tau_norm=detail.get("event_tau_norm"),
        evidence_recall=outcome.evidence_recall, flags=flags, known_bad_reason=q.known_bad_rubric,
        # the judge's own score value (judge_score) is the scorer's, not the record's
        items=[ItemScore.model_validate({
            "rubric_item": i.get("rubric_item"), "score": i.get("score"), "reason": i.get("reason"),
            "parsed": i.get("parsed", True), "reply": i.get("reply"), "repeats": i.get("repeats", []),
            "reply_format": i.get("reply_format")}) for i in detail.get("items", [])],
        event_detail=detail.get("event_detail"),
        usage={role: UsageRow.model_validate(row) for role, row in outcome.usage.items()},
        agent_steps=answer.steps,
        seconds=round(sum(outcome.seconds.values()), 3), phase_seconds=outcome.seconds,
        scorer=detail.get("mode"), source_message_ids=list(q.source_message_ids),
        retrieved_message_ids=sorted(answer.retrieved_message_ids), trace=answer.trace,
        context_tokens=answer.context_tokens, system=outcome.system,
    )


def record_unjudged(outcome: Outcome, user_properties: list[tuple[str, object]]) -> None:
    """An answer whose judging failed (the question errors): its result without a score goes on
    the item, so the record keeps the answer and what it cost, for ``rejudge`` to score later."""
    _record(question_record(outcome), lambda name, value: user_properties.append((name, value)))


def check_outcome(outcome: Outcome, session: BeamSession, user_properties: list[tuple[str, object]],
                  snapshot: SnapshotAssertion) -> None:
    """Properties go straight onto the item: JUnit XML writes them under any junit_family,
    and `record_property` would warn under the default xunit2."""
    settings = session.settings

    def record_property(name: str, value: object) -> None:
        user_properties.append((name, value))

    result = question_record(outcome)
    result.answer_changed, result.answer_diff, snapshot_failure = _snapshot(
        outcome, session.config, snapshot, settings.snapshot)
    _record(result, record_property)
    if snapshot_failure:
        pytest.fail(snapshot_failure, pytrace=False)
    if NO_ANSWER_FLAGS & set(result.flags):
        pytest.fail(f"{result.id}: the agent gave no answer ({', '.join(result.flags)}); scored 0", pytrace=False)
    assert result.score is not None  # judged: an answer whose judging failed went to record_unjudged
    if not passes(result.score, settings.pass_score):
        lines = [f"{result.id}: score {result.score:.3f} < pass score {settings.pass_score}"]
        lines += [f"  [{i.score}] {i.rubric_item} — {i.reason}" for i in result.items]
        if result.event_f1 is not None:
            lines.append(f"  event_f1={result.event_f1:.3f} event_tau_norm={result.event_tau_norm:.3f}")
        pytest.fail("\n".join(lines), pytrace=False)


def _record(result: QuestionRecord, record_property: RecordProperty) -> None:
    """Metrics as user properties: JUnit XML carries them; the result itself, as JSON, rides along
    to the controller (xdist copies user properties there)."""
    for key in ("score", "score_excluding_known_bad", "event_f1", "event_tau_norm", "evidence_recall"):
        value = getattr(result, key)
        if value is not None:
            record_property(key, round(float(value), 6))
    if result.flags:
        record_property("flags", ",".join(result.flags))
    for n, item in enumerate(result.items):
        record_property(f"item_{n}", json.dumps({"score": item.score, "reason": item.reason}))
    from ..results.schema import all_calls

    # Tokens paid live, and apart the calls and tokens served from the cache or a cassette: a
    # replayed question has no live tokens, which is not the same as a question that cost nothing.
    total = {"prompt_tokens": 0, "completion_tokens": 0, "cached_calls": 0, "replayed_calls": 0, "cached_tokens": 0}
    for usage in result.usage.values():
        for key in total:
            total[key] += int(getattr(usage, key) or 0)
    record_property("calls", all_calls(result.usage))  # live, cached and replayed, as the record counts
    for key, value in total.items():
        if value or key in ("prompt_tokens", "completion_tokens"):
            record_property(key, value)
    record_property("agent_steps", result.agent_steps)
    record_property(PROPERTY_PREFIX + "result", result.in_run_json())


def _snapshot(outcome: Outcome, config: pytest.Config, snapshot: SnapshotAssertion,
              mode: str) -> tuple[bool | None, str | None, str | None]:
    """(changed, diff, failure): `assert` fails on a changed answer; `report` only notes it;
    `off` does nothing."""
    if mode == "off":
        return None, None, None
    from .answer_snapshots import AnswerSnapshotExtension, snapshot_path

    text = (outcome.answer.text or "").rstrip("\n") + "\n"
    updating = bool(config.getoption("update_snapshots", False))
    path = snapshot_path(config.rootpath, outcome.question.id, outcome.system)
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
            failure = f"{outcome.question.id}: the answer differs from its snapshot\n{why}"
        return (old is not None and old != text), diff, failure
    if old is None:
        return None, None, None
    return old != text, diff, None

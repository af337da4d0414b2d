"""One question's result, in one shape from the test to ``record.json``: :class:`QuestionRecord`, and the
one function that builds it, :func:`question_record`, which the run and ``pytest-beam rejudge`` share.

It keeps the scorer's verdict as the scorer gave it: every field of the
:class:`~pytest_beam.scoring.scores.QuestionScore` under the record's long-standing names (its
``ItemScore`` objects, the typed ``EventOrderingDetail``, its judge calls, the profile as
``scorer``), beside what the system answered and what it cost (one :class:`~pytest_beam.llm.meter.Usage`
per role, as the meter counted it). Within a run an unknown key is an error: the test and the
controller run the same version, so a key nobody knows is a bug; a record file from a newer
version still loads (:data:`~.record_base.RECORD_FILE_CONTEXT`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from pydantic import ConfigDict, Field, ValidationInfo, model_validator

from ..llm.meter import Usage
from ..scoring.scores import FLAGS, EventOrderingDetail, ItemScore, passes
from .record_base import IN_RUN, WithRunOnlyFields

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..scoring.scores import QuestionScore
    from ..system import SystemAnswer

__all__ = ["KNOWN_BAD_FLAG", "QuestionRecord", "RecordedStep", "TestOutcome", "all_calls", "expected_outcome",
           "question_record"]

KNOWN_BAD_FLAG = "known_bad_rubric"

#: pytest's verdict on a question's item, as the record keeps it.
TestOutcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]

#: A step of a question's trace as a record holds it: a ``system.TraceStep`` when this version
#: wrote it, whatever another version or a system of its own wrote when a file is read back, so
#: open by nature; readers check the keys they use (``store.normalize_step``).
RecordedStep: TypeAlias = dict[str, Any]


def all_calls(usage: Mapping[str, Usage]) -> int:
    """Model calls in a usage table, whether live, cached or replayed (``Usage.all_calls``, summed)."""
    return sum(row.all_calls for row in usage.values())


class QuestionRecord(WithRunOnlyFields):
    """One probing question of one run: its answer, the scorer's verdict, flags, usage and (optionally) trace."""

    model_config = ConfigDict(extra="forbid")

    #: Fields the run needs on its way to the record (the controller's phase times, the terminal's
    #: answer diff) that the record file does not hold.
    RUN_ONLY: ClassVar[frozenset[str]] = frozenset({"phase_seconds", "answer_diff"})

    id: str = Field(description='e.g. "conv17:information_extraction:0"')
    conversation_id: str = ""
    ability: str = ""
    index: int = 0
    question: str = ""
    answer: str | None = None
    score: float | None = Field(default=None, description="None when the question errored or was skipped")
    score_excluding_known_bad: float | None = Field(default=None, description="None for a known-bad-flagged question")
    event_f1: float | None = None
    event_tau_norm: float | None = None
    evidence_recall: float | None = Field(default=None, description="None for abstention questions (no source ids)")
    flags: list[str] = Field(default_factory=list, description="The answer's, the scorer's and known_bad_rubric")
    known_bad_reason: str | None = None
    items: list[ItemScore] = Field(default_factory=list, description="The scorer's rubric items, as it gave them")
    event_detail: EventOrderingDetail | None = Field(default=None, description="event_ordering: the scorer's detail")
    judge_calls: int | None = Field(default=None, description="Judge calls the scorer made (None: not judged)")
    outcome: TestOutcome = "passed"
    error: str | None = Field(default=None, description="The skip reason or the error summary")
    usage: dict[str, Usage] = Field(default_factory=dict, description="role -> usage")
    agent_steps: int = 0
    seconds: float = 0.0
    scorer: str | None = Field(default=None, description="The scoring profile that scored it (None: not judged)")
    source_message_ids: list[int] = Field(default_factory=list)
    retrieved_message_ids: list[int] = Field(default_factory=list)
    answer_changed: bool | None = Field(
        default=None, description="The answer differs from its snapshot (None: not compared)")
    context_tokens: int | None = Field(
        default=None,
        description="Tokens the system put in front of the answering model for this question (None: not measured)")
    system: str | None = Field(default=None, description="The memory system that answered (--beam-system name)")
    trace: list[RecordedStep] = Field(
        default_factory=list,
        description="Agent steps: {kind: model|tool, tool, arguments, result_chars, message_ids, text?}; "
        "may be empty here, always present in the trace file",
    )
    phase_seconds: dict[str, float] = Field(
        default_factory=dict, description="In the run only: agent, judge -> seconds (the record sums them)")
    answer_diff: str | None = Field(default=None, description="In the run only: the answer's diff from its snapshot")

    @model_validator(mode="before")
    @classmethod
    def _known_keys_of_a_file(cls, data: Any, info: ValidationInfo) -> Any:
        """A record file's question keeps the keys this version knows (see RECORD_FILE_CONTEXT)."""
        if isinstance(data, Mapping) and (info.context or {}).get("record_file"):
            return {k: v for k, v in data.items() if k in cls.model_fields}
        return data

    def run_json(self) -> str:
        """This result as the run carries it to the controller (the ``beam_result`` user property):
        run-only fields included, the trace left out (it has its own file)."""
        return self.model_dump_json(exclude={"trace"}, context=IN_RUN)

    def with_verdict(self, outcome: TestOutcome, error: str | None) -> QuestionRecord:
        """This result with pytest's verdict on its item (the report's, which only the report knows)."""
        return self.model_copy(update={"outcome": outcome, "error": error})

    @property
    def answer_flags(self) -> list[str]:
        """The flags the system's answer raised (neither the scorer's nor known_bad_rubric)."""
        return [f for f in self.flags if f not in FLAGS and f != KNOWN_BAD_FLAG]

    @property
    def gave_no_answer(self) -> bool:
        """The system flagged its answer as none (``system.NO_ANSWER_FLAGS``): scored 0, unjudged."""
        from ..system import NO_ANSWER_FLAGS

        return bool(NO_ANSWER_FLAGS & set(self.flags))

    @property
    def judge_agreement(self) -> float | None:
        """With judge repeats: share of this question's repeated decisions (items, event lines) that all agreed."""
        from ..scoring.repeats import agreement_units

        agreed, repeated = agreement_units(self.items, self.event_detail)
        return agreed / repeated if repeated else None

    @property
    def known_bad(self) -> bool:
        return KNOWN_BAD_FLAG in self.flags or bool(self.known_bad_reason)

    @property
    def scored(self) -> bool:
        """Whether the question counts in the means: it has a score and neither errored nor was skipped."""
        return self.score is not None and self.outcome not in ("error", "skipped")

    @property
    def calls(self) -> int:
        """Model calls this question made, whether live, cached or replayed from a cassette."""
        return all_calls(self.usage)

    @property
    def agent_calls(self) -> int:
        agent = self.usage.get("agent")
        return self.agent_steps if agent is None else agent.all_calls


def expected_outcome(score: float | None, known_bad: bool, pass_score: float) -> TestOutcome:
    """The verdict a score gives (``scoring.passes``), as the test decides it and rejudge repeats it;
    a known-bad question's is xfail's."""
    passed = score is not None and passes(score, pass_score)
    if known_bad:
        return "xpassed" if passed else "xfailed"
    return "passed" if passed else "failed"


def question_record(question: ProbingQuestion, *, system: str | None, answer: SystemAnswer | None = None,
                    judged: QuestionScore | None = None, usage: Mapping[str, Usage] | None = None,
                    seconds: Mapping[str, float] | None = None, pass_score: float = 0.5,
                    outcome: TestOutcome | None = None, error: str | None = None) -> QuestionRecord:
    """The one builder of a question's result, in the run and in ``rejudge`` alike.

    ``answer`` None: the question never got one (an error before it, a skip); ``judged`` None with an
    answer: judging it failed (the answer is kept for ``rejudge``). The scorer's fields are taken as
    the scorer gave them. ``outcome`` None: the verdict the score gives at ``pass_score`` (a report's
    verdict replaces it in the run, see :meth:`QuestionRecord.with_verdict`).
    """
    from ..scoring.metrics import evidence_recall

    known_bad = bool(question.known_bad_rubric)
    flags = set(answer.flags if answer is not None else ()) | set(judged.flags if judged is not None else ())
    score = judged.score if judged is not None else None
    return QuestionRecord(
        id=question.id, conversation_id=question.conversation_id, ability=question.ability, index=question.index,
        question=question.question, answer=answer.text if answer is not None else None,
        score=score, score_excluding_known_bad=None if known_bad else score,
        event_f1=judged.event_f1 if judged is not None else None,
        event_tau_norm=judged.event_tau_norm if judged is not None else None,
        evidence_recall=(evidence_recall(question.source_message_ids, answer.retrieved_message_ids)
                         if answer is not None else None),
        flags=sorted(flags | ({KNOWN_BAD_FLAG} if known_bad else set())), known_bad_reason=question.known_bad_rubric,
        items=list(judged.items) if judged is not None else [],
        event_detail=judged.event_detail if judged is not None else None,
        judge_calls=judged.judge_calls if judged is not None else None,
        outcome=outcome if outcome is not None else expected_outcome(score, known_bad, pass_score),
        error=error, usage=dict(usage or {}), agent_steps=answer.steps if answer is not None else 0,
        seconds=round(sum((seconds or {}).values()), 3), phase_seconds=dict(seconds or {}),
        scorer=judged.mode if judged is not None else None, source_message_ids=list(question.source_message_ids),
        retrieved_message_ids=sorted(answer.retrieved_message_ids) if answer is not None else [],
        context_tokens=answer.context_tokens if answer is not None else None, system=system,
        trace=list(answer.trace) if answer is not None else [],
    )

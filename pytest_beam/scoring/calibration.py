"""Judge calibration from BEAM itself: labelled cases built from the questions' reference answers.

A score means little until the judge that gave it is measured. Every BEAM probing question carries
a reference answer (``answer``, ``ideal_answer``, ``ideal_response``, ``ideal_summary`` or
``expected_compliance``) that never reaches a memory system; from it and the rubric we know what a
sound judge must say, with no human labelling:

``reference``
    the question's reference answer against each of its own rubric items: expected pass. Left out
    of the agreement (``excluded``, with the reason) where the reference visibly lacks the item:
    its content words or numbers are missing from the reference, or the reference only describes
    what a compliant answer would do (``expected_compliance``).
``other_reference``
    another question's reference answer (another ability, another conversation where there is
    one) against the question's first rubric item: expected fail -- it answers something else.
``empty`` / ``dont_know``
    an empty answer and an "I don't know" answer against the first item: expected fail, except
    ``dont_know`` for abstention, whose rubric asks for exactly that.
``same_event`` / ``other_event``
    BEAM's event-ordering yes/no classifier on an event and itself (expected yes) and on an event
    and one of another conversation's events (expected no).

Each case goes through the run's judge exactly as a benchmark answer would (the run's profile,
BEAM's prompts unchanged, ``judge_runs`` repeats); a rubric case "passes" when its item scores
0.5 or more, a classifier case when the reply says yes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..data.records import ProbingQuestion, ReferenceAnswer
from .judge import JudgeModel
from .scores import passes

__all__ = [
    "CALIBRATION_PASS",
    "CaseKind",
    "CalibrationCase",
    "CaseVerdict",
    "DONT_KNOW_ANSWER",
    "build_cases",
    "judge_case",
    "judge_cases",
    "missing_from_reference",
    "sample_cases",
]

CaseKind = Literal["reference", "other_reference", "empty", "dont_know", "same_event", "other_event"]
CASE_KINDS: tuple[str, ...] = ("reference", "other_reference", "empty", "dont_know", "same_event", "other_event")
DONT_KNOW_ANSWER = "I don't know: nothing in our conversation tells me that."
CALIBRATION_PASS = 0.5  # a rubric case passes at this item score (half credit counts as a pass)
COMPLIANCE_KEY = "expected_compliance"


class CalibrationCase(BaseModel):
    """One labelled judge decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description='e.g. "conv17:information_extraction:0#reference:0"')
    question_id: str
    conversation_id: str
    ability: str
    kind: CaseKind
    rubric_item: str = Field(description="The rubric item judged, or for classifier cases the rubric's event")
    answer: str = Field(description="The answer judged, or for classifier cases the other event")
    expected_pass: bool
    source_question: str | None = Field(None, description="other_reference / other_event: where the answer came from")
    excluded: str | None = Field(None, description="Why the case is left out of the agreement (it is not judged)")


class CaseVerdict(BaseModel):
    """What the judge said of one case."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    judged_pass: bool
    score: float = Field(description="The item's score (a classifier case: 1 for yes, 0 for no; the mean of repeats)")
    reason: str | None = None
    flags: list[str] = Field(default_factory=list)
    calls: int = 0


# ----------------------------------------------------------------------------- building the cases

_ITEM_HEAD = re.compile(r"^\s*LLM response should\s+[a-z ]+?:\s*", re.I)
_TOKEN = re.compile(r"[a-z0-9$%£€.,/-]+")
_STOP = frozenset("""
a an the and or but of to in on at for by with from as is are was were be been being it its this that these those
i you he she we they me my your our their his her them us do did does done have has had not no so than then there
what which who whom whose when where why how all any each some such only also very just about into over after before
should state mention contain include response llm mentions states contains includes
""".split())


def _tokens(text: str) -> list[str]:
    out = []
    for raw in _TOKEN.findall(text.lower()):
        token = raw.strip(".,/-")
        if token and token not in _STOP and (len(token) >= 3 or any(c.isdigit() for c in token)):
            out.append(token)
    return out


def _present(token: str, words: set[str], stems: set[str]) -> bool:
    if any(c.isdigit() for c in token):  # numbers must appear as written (after punctuation is stripped)
        return token in words or token.replace(",", "") in words
    return token in words or token[:5] in stems


def missing_from_reference(rubric_item: str, reference: str) -> list[str]:
    """The item's content words (and numbers) that the reference does not contain.

    Words match on their first five letters (so "labelled" finds "labeling"); a number must appear
    as it is written. The item's lead-in ("LLM response should state:") is not content.
    """
    content = _ITEM_HEAD.sub("", rubric_item, count=1)
    ref_tokens = _tokens(reference)
    words = set(ref_tokens) | {t.replace(",", "") for t in ref_tokens}
    stems = {t[:5] for t in ref_tokens}
    seen: list[str] = []
    for token in _tokens(content):
        if not _present(token, words, stems) and token not in seen:
            seen.append(token)
    return seen


def _lacks(rubric_item: str, reference: ReferenceAnswer) -> str | None:
    """Why the reference cannot stand for a compliant answer to this item, or None."""
    if reference.key == COMPLIANCE_KEY:
        return "the reference (expected_compliance) describes what a compliant answer does; it is not an answer"
    missing = missing_from_reference(rubric_item, reference.text)
    content = _tokens(_ITEM_HEAD.sub("", rubric_item, count=1))
    numbers = [t for t in missing if any(c.isdigit() for c in t)]
    if numbers or (content and len(missing) > len(content) / 2):
        return "the reference lacks the item's " + ", ".join(repr(t) for t in missing[:8])
    return None


def _stable_rank(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def _answer_like(reference: ReferenceAnswer | None) -> bool:
    return reference is not None and reference.key != COMPLIANCE_KEY and bool(reference.text.strip())


def _other_reference(question: ProbingQuestion, questions: Sequence[ProbingQuestion],
                     references: Mapping[str, ReferenceAnswer]) -> ProbingQuestion | None:
    """Another question whose reference answers something else: another ability, another
    conversation where the set has one; chosen by a stable hash, so the cases never move."""
    candidates = [q for q in questions if q.ability != question.ability and q.ability != "event_ordering"
                  and _answer_like(references.get(q.id))]
    elsewhere = [q for q in candidates if q.conversation_id != question.conversation_id]
    pool = elsewhere or candidates
    if not pool:
        return None
    return min(pool, key=lambda q: _stable_rank(question.id, q.id))


def _other_event(question: ProbingQuestion, index: int, questions: Sequence[ProbingQuestion]) -> tuple[str, str] | None:
    """An event of another conversation's event-ordering rubric (another question's where there is none)."""
    others = [q for q in questions if q.ability == "event_ordering" and q.id != question.id and q.rubric]
    elsewhere = [q for q in others if q.conversation_id != question.conversation_id] or others
    if not elsewhere:
        return None
    source = min(elsewhere, key=lambda q: _stable_rank(question.id, str(index), q.id))
    event = source.rubric[int(_stable_rank(question.id, str(index))[:8], 16) % len(source.rubric)]
    return source.id, event


def build_cases(questions: Iterable[ProbingQuestion],
                references: Mapping[str, ReferenceAnswer]) -> list[CalibrationCase]:
    """Every labelled case of ``questions`` (module docstring), in question order."""
    questions = list(questions)
    cases: list[CalibrationCase] = []

    def add(question: ProbingQuestion, kind: CaseKind, n: int, item: str, answer: str, expected: bool,
            source: str | None = None, excluded: str | None = None) -> None:
        cases.append(CalibrationCase(
            id=f"{question.id}#{kind}:{n}", question_id=question.id, conversation_id=question.conversation_id,
            ability=question.ability, kind=kind, rubric_item=item, answer=answer, expected_pass=expected,
            source_question=source, excluded=excluded))

    for question in questions:
        if not question.rubric:
            continue
        if question.ability == "event_ordering":
            for n, event in enumerate(question.rubric):
                add(question, "same_event", n, event, event, True)
                other = _other_event(question, n, questions)
                if other is not None:
                    add(question, "other_event", n, event, other[1], False, source=other[0])
            continue
        reference = references.get(question.id)
        if reference is not None and reference.text.strip():
            for n, item in enumerate(question.rubric):
                add(question, "reference", n, item, reference.text, True, excluded=_lacks(item, reference))
        first = question.rubric[0]
        other_q = _other_reference(question, questions, references)
        if other_q is not None:
            add(question, "other_reference", 0, first, references[other_q.id].text, False, source=other_q.id)
        add(question, "empty", 0, first, "", False)
        add(question, "dont_know", 0, first, DONT_KNOW_ANSWER, question.ability == "abstention")
    return cases


def sample_cases(cases: Sequence[CalibrationCase], size: int | None) -> list[CalibrationCase]:
    """At most ``size`` judged cases (the excluded ones are never judged), every kind represented:
    the kinds take turns, each in a stable hashed order, so the same set gives the same sample."""
    judged = [c for c in cases if c.excluded is None]
    if size is None or size >= len(judged):
        return judged
    queues = {kind: sorted((c for c in judged if c.kind == kind), key=lambda c: _stable_rank(c.id))
              for kind in CASE_KINDS}
    chosen: list[CalibrationCase] = []
    while len(chosen) < size:
        for kind in CASE_KINDS:
            if queues[kind] and len(chosen) < size:
                chosen.append(queues[kind].pop(0))
    order = {c.id: n for n, c in enumerate(judged)}
    return sorted(chosen, key=lambda c: order[c.id])


# ----------------------------------------------------------------------------- judging them

def judge_case(case: CalibrationCase, question: ProbingQuestion, judge: JudgeModel, profile: str,
               judge_runs: int = 1) -> CaseVerdict:
    """One case through the run's judge: a one-item copy of the question scored under ``profile``
    (so the profile's own prompt filling and score rules apply), or BEAM's yes/no classifier."""
    if case.excluded is not None:
        raise ValueError(f"case {case.id} is excluded ({case.excluded}); it is not judged")
    if case.kind in ("same_event", "other_event"):
        from .event_ordering import same_event

        votes = [same_event(judge, case.rubric_item, case.answer, repeat) for repeat in range(judge_runs)]
        yes = sum(1 for verdict, _ in votes if verdict)
        flags = sorted(set().union(*(asked.flags for _, asked in votes)))
        return CaseVerdict(case_id=case.id, judged_pass=yes * 2 > judge_runs, score=yes / judge_runs,
                           reason=votes[0][1].text or None, flags=flags, calls=sum(a.calls for _, a in votes))
    from .scorer import score_question

    one_item = question.model_copy(update={"rubric": (case.rubric_item,)})
    scored = score_question(one_item, case.answer, judge, mode=profile, judge_runs=judge_runs)
    item = scored.items[0]
    return CaseVerdict(case_id=case.id, judged_pass=passes(item.score, CALIBRATION_PASS), score=item.score,
                       reason=item.reason, flags=list(scored.flags), calls=scored.judge_calls)


def judge_cases(cases: Sequence[CalibrationCase], questions: Mapping[str, ProbingQuestion], judge: JudgeModel,
                profile: str, judge_runs: int = 1,
                progress: Callable[[int, int], None] | None = None) -> list[CaseVerdict]:
    """Every case judged in order (``progress(done, total)`` after each); judge errors propagate."""
    verdicts = []
    for n, case in enumerate(cases, 1):
        verdicts.append(judge_case(case, questions[case.question_id], judge, profile, judge_runs))
        if progress is not None:
            progress(n, len(cases))
    return verdicts

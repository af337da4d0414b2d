"""BEAM's own scorer as two profiles: ``default`` (its defects fixed) and ``upstream`` (its code as published).

See ``../shared/beam/upstream-scorer.md``. One judge call per rubric item with BEAM's prompt; the
question scores the mean of its items. Where they differ:

``default``
    The prompt's ``<question>``, ``<rubric_item>`` and ``<llm_response>`` slots are filled in one
    pass. An item scores the judge's ``score`` if it is 1, 0.5 or 0 (a JSON number or a numeric
    string); anything else -- no JSON object, no ``score``, a score outside {0, 0.5, 1} -- scores 0
    and flags ``parse_error`` (no ``json_repair`` guessing). Event ordering: the answer's non-empty
    lines, stripped; ``score = event_f1 * event_tau_norm``; an answer with no line scores 0 with
    no judge call.

``upstream``
    ``<question>`` is left literal (upstream never fills it) and the slots are filled by two
    chained ``str.replace`` calls; the item score is ``int(float(score))`` -- 0.5 truncates to 0;
    a score outside {0, 0.5, 1} is kept, truncated, and flagged ``score_out_of_range``. Where
    upstream's parser fails and it would fall back to ``json_repair`` (a guess, or an exception),
    the item scores 0 with ``parse_error`` instead. Event ordering: ``answer.split("\\n")`` --
    every line, blank ones too, unstripped; the reported score is ``event_tau_norm`` alone, as
    upstream's report_results.py reports it (``event_f1`` and the product kept in the detail).

In both, a NaN ``tau_norm`` (tau-b undefined, e.g. a one-line answer) is reported as 0 with the
flag ``tau_undefined``: a NaN would poison every mean it enters. Known upstream quirk kept in
both: items are compared as strings, so an unmatched line equal to a rubric event counts as it.
"""

from __future__ import annotations

import json
import math
from typing import Any, ClassVar

from ..data.records import ProbingQuestion
from ..llm.wire import JsonObject
from .event_ordering import align_repeats, repeat_record
from .judge import (
    JudgeModel,
    ask_judge,
    fill_question_and_answer,
    fill_rubric_and_answer,
    judge_number,
    parse_judge_json,
    require_rubric,
)
from .metrics import EventOrderingMetrics, event_ordering_metrics
from .profile import ScoringProfile
from .profile_names import ProfileName
from .scores import EventOrderingDetail, ItemScore, QuestionScore

__all__ = ["DefaultProfile", "UpstreamProfile"]

ALLOWED_SCORES = (0.0, 0.5, 1.0)


def _reason(data: JsonObject) -> str | None:
    raw = data.get("reason")
    return raw if isinstance(raw, str) else (None if raw is None else json.dumps(raw))


def _as_recorded(judge_score: Any) -> float | str | None:
    """The judge's ``score`` as the record keeps it: a number or string as given, anything else as JSON."""
    if isinstance(judge_score, bool) or not isinstance(judge_score, (int, float, str)):
        return None if judge_score is None else json.dumps(judge_score)
    if isinstance(judge_score, float) and not math.isfinite(judge_score):
        return str(judge_score)
    return judge_score


class DefaultProfile(ScoringProfile):
    name: ClassVar[ProfileName] = "default"
    question_in_prompt: ClassVar[bool] = True
    half_credit: ClassVar[str] = "kept"
    event_ordering: ClassVar[str] = "event_f1 x (tau_b + 1) / 2 over the union of events, missing ones tied last"
    matches: ClassVar[str] = "this project's fixed port of BEAM's scorer"

    # -- rubric items ----------------------------------------------------------------------------

    def fill_prompt(self, question: str, rubric_item: str, answer: str) -> str:
        return fill_question_and_answer(question, rubric_item, answer)

    def item_score(self, number: float) -> tuple[float, set[str]] | None:
        """The item's score from the judge's number, and the flags it raises; None: unusable."""
        return (number, set()) if number in ALLOWED_SCORES else None

    def read_reply(self, reply: str) -> tuple[JsonObject | None, Any, tuple[float, set[str]] | None]:
        """A judge reply's JSON object, its raw ``score`` and the item score it gives (None: unusable,
        and then never kept in the response cache)."""
        try:
            data: JsonObject | None = parse_judge_json(reply)
        except ValueError:
            data = None
        judge_score = data.get("score") if isinstance(data, dict) else None
        number = judge_number(judge_score)
        return data, judge_score, self.item_score(number) if number is not None else None

    def judge_item(self, question: str, rubric_item: str, answer: str, judge: JudgeModel,
                   repeat: int = 0) -> tuple[ItemScore, set[str], int]:
        asked = ask_judge(judge, [{"role": "user", "content": self.fill_prompt(question, rubric_item, answer)}],
                          repeat=repeat, parses=lambda text: self.read_reply(text)[2] is not None)
        flags = set(asked.flags)
        data, judge_score, scored = self.read_reply(asked.text)
        if scored is None:
            flags.add("parse_error")
        else:
            flags |= scored[1]
        item = ItemScore(rubric_item=rubric_item, score=scored[0] if scored else 0.0,
                         judge_score=_as_recorded(judge_score),
                         reason=_reason(data) if isinstance(data, dict) else None,
                         reply=asked.text, parsed=scored is not None, reply_format=asked.reply_format)
        return item, flags, asked.calls

    # -- event ordering --------------------------------------------------------------------------

    def answer_lines(self, answer: str) -> list[str]:
        """The answer's lines as the classifier will see them."""
        return [line.strip() for line in answer.split("\n") if line.strip()]

    def event_score(self, metrics: EventOrderingMetrics) -> float:
        return metrics.score

    def score_events(self, question: ProbingQuestion, answer: str, judge: JudgeModel,
                     judge_runs: int = 1) -> QuestionScore:
        reference = require_rubric(question)
        lines = self.answer_lines(answer)
        alignments = align_repeats(reference, lines, judge, judge_runs)
        every = [event_ordering_metrics(reference, [m.event if m.event is not None else m.line for m in matches])
                 for matches, _, _ in alignments]
        scores = [self.event_score(m) for m in every]
        matches, _, _ = alignments[0]
        metrics = every[0]
        judge_flags: set[str] = set().union(*(f for _, _, f in alignments))
        undefined = not all(m.tau_defined for m in every)
        detail = EventOrderingDetail(
            precision=metrics.precision, recall=metrics.recall, event_f1=metrics.f1, tau_b=metrics.tau_b,
            event_tau_norm=metrics.tau_norm, f1_times_tau_norm=metrics.score, answer_lines=lines, alignment=matches,
            reference_order=reference, answer_order=[m.event if m.event is not None else m.line for m in matches],
            **repeat_record(scores, alignments),
        )
        return QuestionScore(
            question_id=question.id, ability=question.ability, mode=self.name, score=sum(scores) / len(scores),
            items=[], flags=sorted(judge_flags | ({"tau_undefined"} if undefined else set())),
            judge_calls=sum(c for _, c, _ in alignments), event_f1=sum(m.f1 for m in every) / len(every),
            event_tau_norm=sum(m.tau_norm for m in every) / len(every), event_detail=detail,
        )


class UpstreamProfile(DefaultProfile):
    name: ClassVar[ProfileName] = "upstream"
    question_in_prompt: ClassVar[bool] = False
    half_credit: ClassVar[str] = "truncated to 0"
    event_ordering: ClassVar[str] = "(tau_b + 1) / 2 only, every answer line (blank ones too)"
    matches: ClassVar[str] = "BEAM's own code (mohammadtavakoli78/BEAM b2a3ee8) and the paper's tables"

    def fill_prompt(self, question: str, rubric_item: str, answer: str) -> str:
        return fill_rubric_and_answer(rubric_item, answer)

    def item_score(self, number: float) -> tuple[float, set[str]] | None:
        # int(response['score']): truncation toward zero, kept even when out of range
        return float(int(number)), (set() if number in ALLOWED_SCORES else {"score_out_of_range"})

    def answer_lines(self, answer: str) -> list[str]:
        return answer.split("\n")

    def event_score(self, metrics: EventOrderingMetrics) -> float:
        return metrics.tau_norm

"""The ``omnimemeval`` profile: BEAM scored the way OmniMemEval's published harness scores it.

Definition read from MemTensor/OmniMemEval, file ``scripts/beam/beam_eval.py`` at commit
``7df23bc13017cd9286d36f2afb8daa42b8b6c4dd`` (functions ``_extract_item_score``,
``_kendall_tau_b``, ``_judge_event_ordering``, ``process_response``); written here from that
definition, no code copied. What it defines:

* Rubric items: the judge sees the question. The judge's number ``s`` counts as 1 when
  ``s >= 0.75``, 0.5 when ``0.25 <= s < 0.75``, else 0 (so 0.5 is kept). A reply with no number
  scores 0. Question score = mean of the items.
* Event ordering: for each rubric event, its 1-based position in the answer, or absent. Coverage
  = events found / rubric events. Fewer than two found: score = coverage x 0.5 (0 when none).
  Otherwise tau-b between the found events' rubric order and their answer positions,
  ``tau_norm = max(0, (tau_b + 1) / 2)`` (tau-b taken as 0 when its denominator is 0), and
  ``score = tau_norm x coverage``. Answer lines that match no rubric event do not count at all.

Where this port differs, on purpose (the rules forbid copying another project's prompt text):

* The item judge uses BEAM's own prompt (``prompts.JUDGE_PROMPT``) with the question filled, not
  OmniMemEval's own judge prompt; an unparseable reply also flags ``parse_error`` here.
* Event positions come from BEAM's yes/no alignment (``event_ordering.align_lines``, one call per
  line-event pair): an event's position is the number of the non-empty answer line matched to it.
  OmniMemEval asks one judge call for all positions at once. The metric over positions is the same.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..data.records import ProbingQuestion
from .beam_profiles import DefaultProfile
from .event_ordering import align_repeats, repeat_record
from .judge import JudgeModel, ask_judge, parse_judge_json, require_rubric
from .metrics import event_ordering_metrics, kendall_tau_b
from .profile_names import ProfileName
from .scores import EventOrderingDetail, ItemScore, QuestionScore

__all__ = [
    "OmniEventScore",
    "OmniMemEvalProfile",
    "event_positions",
    "omnimemeval_event_score",
    "read_judge_number",
    "snap_item_score",
]

_LOOSE_SCORE = re.compile(r'"?score"?\s*[:=]\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)')


def snap_item_score(raw: float) -> float:
    """A judge's number as the item score: 1 from 0.75 up, 0.5 from 0.25 up, else 0."""
    if raw >= 0.75:
        return 1.0
    if raw >= 0.25:
        return 0.5
    return 0.0


def read_judge_number(reply: str) -> tuple[float | None, str | None]:
    """(score, reason) from a judge reply: its JSON number if it parses, else a loose ``score: N`` in the text."""
    try:
        data = parse_judge_json(reply)
    except ValueError:
        data = None
    value = data.get("score") if isinstance(data, dict) else None
    # Only a JSON number counts, as in OmniMemEval's pattern (a quoted "0.5" does not match there).
    if (isinstance(data, dict) and isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value)):
        reason = data.get("reason")
        return float(value), reason if isinstance(reason, str) else (None if reason is None else json.dumps(reason))
    loose = _LOOSE_SCORE.search(reply)
    if loose:
        return float(loose.group(1)), None
    return None, None


@dataclass(frozen=True)
class OmniEventScore:
    coverage: float
    tau_b: float | None
    """None when fewer than two events were found (OmniMemEval computes no tau there)."""
    tau_norm: float
    score: float


def omnimemeval_event_score(positions: Sequence[int]) -> OmniEventScore:
    """OmniMemEval's event-ordering score from each rubric event's answer position (<= 0: absent)."""
    if not positions:
        raise ValueError("no rubric events to score")
    found = [(index, position) for index, position in enumerate(positions) if position > 0]
    coverage = len(found) / len(positions)
    if len(found) < 2:
        return OmniEventScore(coverage=coverage, tau_b=None, tau_norm=0.5, score=coverage * 0.5)
    tau = kendall_tau_b([i for i, _ in found], [p for _, p in found])
    tau = 0.0 if math.isnan(tau) else tau  # zero denominator: OmniMemEval takes tau-b as 0
    tau_norm = max(0.0, (tau + 1.0) / 2.0)
    return OmniEventScore(coverage=coverage, tau_b=tau, tau_norm=tau_norm, score=tau_norm * coverage)


def event_positions(matched_event_index: Sequence[int | None], events: int) -> list[int]:
    """Each event's 1-based answer-line number from the alignment (line i matched event j); -1 if unmatched."""
    positions = [-1] * events
    for line_number, index in enumerate(matched_event_index, start=1):
        if index is not None and positions[index] == -1:
            positions[index] = line_number
    return positions


class OmniMemEvalProfile(DefaultProfile):
    """Rubric items asked with the question filled in, read loosely and snapped; event ordering by
    found events' order times coverage (module docstring)."""

    name: ClassVar[ProfileName] = "omnimemeval"
    question_in_prompt: ClassVar[bool] = True
    half_credit: ClassVar[str] = "snapped to 0, 0.5 or 1"
    event_ordering: ClassVar[str] = ("max(0, (tau_b + 1) / 2) over the rubric events found, times coverage "
                                     "(found / rubric events)")
    matches: ClassVar[str] = "MemTensor/OmniMemEval scripts/beam/beam_eval.py at 7df23bc1"

    def judge_item(self, question: str, rubric_item: str, answer: str, judge: JudgeModel,
                   repeat: int = 0) -> tuple[ItemScore, set[str], int]:
        # OmniMemEval reads any number, loosely: the verdict is asked plain, with no schema
        asked = ask_judge(judge, [{"role": "user", "content": self.fill_prompt(question, rubric_item, answer)}],
                          repeat=repeat, response_format=None,
                          parses=lambda text: read_judge_number(text)[0] is not None)
        reply = asked.text
        flags = set(asked.flags)
        number, reason = read_judge_number(reply)
        if number is None:
            flags.add("parse_error")
        item = ItemScore(rubric_item=rubric_item, score=0.0 if number is None else snap_item_score(number),
                         judge_score=number, reason=reason, reply=reply, parsed=number is not None,
                         reply_format=asked.reply_format)
        return item, flags, asked.calls

    def score_events(self, question: ProbingQuestion, answer: str, judge: JudgeModel,
                     judge_runs: int = 1) -> QuestionScore:
        reference = require_rubric(question)
        lines = self.answer_lines(answer)
        alignments = align_repeats(reference, lines, judge, judge_runs)  # one per judge run, each its own calls
        every = [omnimemeval_event_score(event_positions([m.event_index for m in matches], len(reference)))
                 for matches, _, _ in alignments]
        matches, _, _ = alignments[0]
        judge_flags: set[str] = set().union(*(f for _, _, f in alignments))
        omni = every[0]
        beam = event_ordering_metrics(reference, [m.event if m.event is not None else m.line for m in matches])
        detail = EventOrderingDetail(
            precision=beam.precision, recall=beam.recall, event_f1=beam.f1, tau_b=omni.tau_b,
            event_tau_norm=omni.tau_norm, f1_times_tau_norm=beam.f1 * omni.tau_norm, answer_lines=lines,
            alignment=matches, reference_order=reference, answer_order=[str(x) for x in beam.answer_order],
            **repeat_record([e.score for e in every], alignments),
        )
        return QuestionScore(question_id=question.id, ability=question.ability, mode=self.name,
                             score=sum(e.score for e in every) / len(every), items=[], flags=sorted(judge_flags),
                             judge_calls=sum(c for _, c, _ in alignments), event_f1=beam.f1,
                             event_tau_norm=sum(e.tau_norm for e in every) / len(every), event_detail=detail)

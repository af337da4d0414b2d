"""Event ordering: align the answer's lines to the rubric's events, then F1 x normalised tau-b.

The rubric of an event_ordering question is the list of events in their true order. The answer is
split into lines; each line, in order, is compared with every still-unused rubric event, in rubric
order, by BEAM's yes/no binary-classifier prompt (system + user message, exactly as upstream builds
them; first snippet = the event, second = the line); the first reply containing "yes"
(case-insensitive, as upstream -- so "Yes." or "YES" match) maps the line to that event, which is
then used up. An unmatched line stays as itself. Then :func:`metrics.event_ordering_metrics`.

``default`` mode
    Lines are the answer's non-empty lines, stripped of surrounding whitespace (list numbering is
    kept: the judge sees the line as written). ``score = event_f1 * event_tau_norm``. An answer
    with no non-empty line makes no judge call and scores 0.

``upstream`` mode
    Lines are ``answer.split("\\n")`` -- every line, blank ones too, unstripped -- and each is
    sent to the classifier. The reported ``score`` is ``event_tau_norm`` alone, as upstream's
    report_results.py reports it; ``event_f1`` and the product are kept in the detail.

Deliberately NOT done, in either mode:

* upstream's ``extract_facts`` call (its result is thrown away upstream);
* upstream's per-rubric-item judge calls for event_ordering (``llm_judge_score``): computed
  upstream but never reported, so they would cost calls and change no reported number.

With ``--beam-judge-runs N`` the whole alignment is asked N times, each repeat its own (cached)
yes/no calls; the question scores the mean of the repeats' scores, the detail shows the first
repeat's alignment and keeps each repeat's score and matched events, and an answer line counts
as agreed when every repeat matched it to the same event (``repeats.agreement_units``).

Where upstream would report a NaN ``tau_norm`` (tau-b undefined, e.g. a one-line answer) both
modes report 0 and flag the question ``tau_undefined``; a NaN would poison every mean it enters.

Known upstream quirk kept in both modes: items are compared as strings, so an unmatched line whose
text equals a rubric event verbatim counts as that event.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..data.records import ProbingQuestion
from .judge import CLASSIFIER_FORMAT, CLASSIFIER_MAX_TOKENS, JudgeModel, JudgeText, ask_judge, require_rubric
from .metrics import event_ordering_metrics
from .prompts import binary_classifier_messages
from .scores import EventOrderingDetail, LineMatch, QuestionScore, ScorerMode

__all__ = ["answer_lines", "align_lines", "align_repeats", "same_event", "score_event_ordering"]


def answer_lines(answer: str, mode: ScorerMode) -> list[str]:
    """The answer's lines as the classifier will see them (see the module docstring)."""
    if mode == "upstream":
        return answer.split("\n")
    if mode == "default":
        return [line.strip() for line in answer.split("\n") if line.strip()]
    raise ValueError(f"unknown scorer mode {mode!r}")


def same_event(judge: JudgeModel, event: str, line: str, repeat: int = 0) -> tuple[bool, JudgeText]:
    """One yes/no question: does ``line`` describe the same event as ``event``? Returns (verdict, reply).

    A blank reply counts as "no" (as upstream: ``"" .lower()`` has no "yes"); a reply with no text
    at all too, flagged ``parse_error``. A reply cut off before any "yes" is asked again once with a
    larger cap (one already saying "yes" is decided). Client errors propagate. ``repeat`` > 0 is
    its own call, cached apart (judge runs).
    """
    asked = ask_judge(judge, binary_classifier_messages(event, line), max_tokens=CLASSIFIER_MAX_TOKENS, repeat=repeat,
                      undecided=lambda text: "yes" not in text.lower(), response_format=CLASSIFIER_FORMAT)
    return "yes" in asked.text.lower(), asked


Alignment = tuple[list[LineMatch], int, set[str]]


def align_lines(reference: Sequence[str], lines: Sequence[str], judge: JudgeModel,
                repeat: int = 0) -> Alignment:
    """Match lines one-to-one to unused reference events, in order. Returns (matches, judge calls, flags)."""
    used: set[int] = set()
    matches: list[LineMatch] = []
    calls = 0
    flags: set[str] = set()
    for line in lines:
        replies: list[str] = []
        formats: list[str] = []
        matched: int | None = None
        for index, event in enumerate(reference):
            if index in used:
                continue
            verdict, asked = same_event(judge, event, line, repeat)
            calls += asked.calls
            flags |= asked.flags
            replies.append(asked.text)
            formats.append(asked.reply_format)
            if verdict:
                matched = index
                break
        if matched is not None:
            used.add(matched)
        matches.append(
            LineMatch(
                line=line,
                event=reference[matched] if matched is not None else None,
                event_index=matched,
                replies=replies,
                reply_formats=formats,
            )
        )
    return matches, calls, flags


def align_repeats(reference: Sequence[str], lines: Sequence[str], judge: JudgeModel,
                  judge_runs: int = 1) -> list[Alignment]:
    """The alignment asked ``judge_runs`` times (repeat 0 is the plain one); each repeat its own calls."""
    if judge_runs < 1:
        raise ValueError(f"judge runs {judge_runs} must be at least 1")
    return [align_lines(reference, lines, judge, repeat) for repeat in range(judge_runs)]


def repeat_record(scores: Sequence[float], alignments: Sequence[Alignment]) -> dict[str, list]:
    """The detail's repeat fields: empty for one run, else each repeat's score and matched events."""
    if len(alignments) < 2:
        return {}
    return {"repeats": list(scores),
            "repeat_alignments": [[m.event_index for m in matches] for matches, _, _ in alignments]}


def score_event_ordering(question: ProbingQuestion, answer: str, judge: JudgeModel, mode: ScorerMode,
                         judge_runs: int = 1) -> QuestionScore:
    """Score an event_ordering answer (see the module docstring for the two modes and the repeats)."""
    reference = require_rubric(question)
    lines = answer_lines(answer, mode)
    alignments = align_repeats(reference, lines, judge, judge_runs)
    every = [event_ordering_metrics(reference, [m.event if m.event is not None else m.line for m in matches])
             for matches, _, _ in alignments]
    scores = [m.tau_norm if mode == "upstream" else m.score for m in every]
    matches, _, _ = alignments[0]
    metrics = every[0]
    aligned = [m.event if m.event is not None else m.line for m in matches]
    calls = sum(c for _, c, _ in alignments)
    judge_flags: set[str] = set().union(*(f for _, _, f in alignments))
    undefined = not all(m.tau_defined for m in every)

    flags = sorted(judge_flags | ({"tau_undefined"} if undefined else set()))
    detail = EventOrderingDetail(
        precision=metrics.precision,
        recall=metrics.recall,
        event_f1=metrics.f1,
        tau_b=metrics.tau_b,
        event_tau_norm=metrics.tau_norm,
        f1_times_tau_norm=metrics.score,
        answer_lines=lines,
        alignment=matches,
        reference_order=reference,
        answer_order=aligned,
        **repeat_record(scores, alignments),
    )
    return QuestionScore(
        question_id=question.id,
        ability=question.ability,
        mode=mode,
        score=sum(scores) / len(scores),
        items=[],
        flags=flags,
        judge_calls=calls,
        event_f1=sum(m.f1 for m in every) / len(every),
        event_tau_norm=sum(m.tau_norm for m in every) / len(every),
        event_detail=detail,
    )

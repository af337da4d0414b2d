"""Event ordering's shared mechanics: BEAM's yes/no classifier and the alignment of answer lines to events.

The rubric of an event_ordering question is the list of events in their true order. An answer is
split into lines (each profile splits it its own way); each line, in order, is compared with every
still-unused rubric event, in rubric order, by BEAM's yes/no binary-classifier prompt (system +
user message, exactly as upstream builds them; first snippet = the event, second = the line); the
first reply containing "yes" (case-insensitive, as upstream -- so "Yes." or "YES" match) maps the
line to that event, which is then used up. An unmatched line stays as itself. What the alignment
scores is the profile's rule (``beam_profiles.py``, ``omnimemeval.py``).

Deliberately NOT done, in any profile: upstream's ``extract_facts`` call (its result is thrown away
upstream), and upstream's per-rubric-item judge calls for event_ordering (``llm_judge_score``:
computed upstream but never reported, so they would cost calls and change no reported number).

With ``--beam-judge-runs N`` the whole alignment is asked N times, each repeat its own (cached)
yes/no calls; an answer line counts as agreed when every repeat matched it to the same event
(``repeats.agreement_units``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .judge import CLASSIFIER_FORMAT, CLASSIFIER_MAX_TOKENS, JudgeModel, JudgeText, ask_judge
from .prompts import binary_classifier_messages
from .scores import LineMatch

__all__ = ["Alignment", "align_lines", "align_repeats", "repeat_record", "same_event"]


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

"""The rubric judge: one judge call per rubric item with BEAM's prompt.

Two modes (see ``../shared/beam/upstream-scorer.md``):

``default``
    The prompt's ``<question>``, ``<rubric_item>`` and ``<llm_response>`` slots are filled in one
    pass (text put into one slot is never re-scanned for another slot's marker). An item scores
    the judge's ``score`` if it is 1, 0.5 or 0 (a JSON number or a numeric string). Anything else
    -- no JSON object found, no ``score`` key, a score outside {0, 0.5, 1} -- scores the item 0 and
    flags the question ``parse_error``. There is no ``json_repair`` guessing.

``upstream``
    Reproduces the benchmark's code: ``<question>`` is left literal (upstream never fills it), the
    slots are filled with two chained ``str.replace`` calls (``<rubric_item>`` first), and the item
    score is ``int(float(score))`` -- 0.5 truncates to 0. Where upstream's ``parse_json_response``
    fails and upstream would fall back to ``json_repair.repair_json`` (a guess, or an exception),
    this port scores the item 0 and flags ``parse_error`` instead; the same for a reply whose JSON
    lacks ``score`` or has a non-numeric one (upstream would raise). A score outside {0, 0.5, 1}
    is kept, truncated, as upstream does, and flagged ``score_out_of_range``.

In both modes the question score is the mean of the item scores, and the reply's JSON object is
found by :func:`parse_judge_json` (a fenced block first, else the first valid JSON object).

Errors: any exception the judge model raises propagates untouched (the harness turns it into a
test error, never a silent 0). A reply with no text (``text is None``, "" or only whitespace) does
not parse: the item scores 0 and the question is flagged ``parse_error`` (product.md section 3;
upstream would crash on ``None.strip()``). A reply cut off by its token cap is flagged
``judge_truncated`` and asked for once more with a larger cap (:func:`ask_judge`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..data.records import ProbingQuestion
from ..llm.structured import extract_json_object
from .prompts import JUDGE_PROMPT
from .scores import ItemScore, QuestionScore, ScorerMode

__all__ = [
    "JUDGE_ROLE",
    "JudgeModel",
    "JudgeReply",
    "JudgeText",
    "ask_judge",
    "fill_judge_prompt",
    "parse_judge_json",
    "require_rubric",
    "score_item",
    "score_rubric",
]

JUDGE_ROLE: Literal["judge"] = "judge"

_ALLOWED_SCORES = (0.0, 0.5, 1.0)


@runtime_checkable
class JudgeReply(Protocol):
    """What scoring needs of a model reply (``pytest_beam.llm``'s ChatResult fits)."""

    @property
    def text(self) -> str | None: ...

    # also read when present: ``finish_reason`` ("length" = cut off by the token cap)


@runtime_checkable
class JudgeModel(Protocol):
    """What scoring needs of a model client (``pytest_beam.llm``'s ModelClient fits)."""

    def chat(
        self,
        *,
        role: Literal["judge"],
        messages: list[dict[str, str]],
        max_tokens: int | None = None,
        response_format: Any = None,
        accept: Callable[[str | None], bool] | None = None,
    ) -> JudgeReply: ...


# Upstream sets no output limit; ours bounds the reply (not the prompt), so a rambling local
# judge cannot run for minutes. Both are far above what a compliant reply needs; a reply cut off
# at its cap anyway is asked for once more with a cap this many times larger.
JUDGE_MAX_TOKENS = 600
CLASSIFIER_MAX_TOKENS = 16
TRUNCATED_RETRY_FACTOR = 4


# BEAM's verdicts as JSON schemas, sent as ``response_format`` beside the unchanged prompts: an
# endpoint that supports it (llama-server, OpenAI, vLLM) can only reply in the shape the prompt
# asks for, so a small judge's verdict parses; one that refuses it is asked plain (ModelClient.chat)
# and the reply is parsed from text as before. The record keeps which way each reply came.
JUDGE_FORMAT: dict[str, Any] = {"type": "json_schema", "json_schema": {"name": "beam_verdict", "strict": False, "schema": {
    "type": "object",
    "properties": {"score": {"type": "number", "enum": [1.0, 0.5, 0.0]}, "reason": {"type": "string"}},
    "required": ["score", "reason"]}}}
CLASSIFIER_FORMAT: dict[str, Any] = {"type": "json_schema", "json_schema": {"name": "beam_same_event", "strict": False, "schema": {
    "type": "object", "properties": {"answer": {"type": "string", "enum": ["YES", "NO"]}}, "required": ["answer"]}}}
TEXT_FORMAT = "text"  # a reply asked for plain (no response_format, or the endpoint refused it)


@dataclass(frozen=True)
class JudgeText:
    """A judge's reply text ("" when it gave none), the flags it raises, the calls it took and
    how the reply was asked for (``"json_schema"`` or ``"text"``)."""

    text: str
    flags: frozenset[str]
    calls: int
    reply_format: str = TEXT_FORMAT


def _cut_off(result: JudgeReply) -> bool:
    return getattr(result, "finish_reason", None) == "length"


def ask_judge(judge: JudgeModel, messages: list[dict[str, str]], *, max_tokens: int = JUDGE_MAX_TOKENS,
              repeat: int = 0, undecided: Callable[[str], bool] = lambda text: True,
              response_format: dict[str, Any] | None = JUDGE_FORMAT,
              parses: Callable[[str], bool] = lambda text: True) -> JudgeText:
    """One judge question (role ``"judge"``); client exceptions propagate.

    ``repeat`` > 0 asks again as its own call (the model client keys its cache by it); repeat 0
    is the call as it always was. A reply cut off by its token cap (``finish_reason ==
    "length"``) flags ``judge_truncated`` and, when ``undecided(text)`` says the cut text does not
    already settle it, is asked again once with a cap ``TRUNCATED_RETRY_FACTOR`` times larger;
    whatever the second reply is, it is used. A reply with no text at all flags ``parse_error``
    and reads as "" (product.md section 3). ``parses(text)`` says whether the caller can read the
    reply: one it cannot (a garbage verdict) is not kept in the response cache, so the next run
    asks again rather than replaying the failure.
    """
    extra: dict[str, Any] = {"repeat": repeat} if repeat else {}
    if response_format is not None:
        extra["response_format"] = response_format
    extra["accept"] = lambda text: text is not None and parses(text)

    def ask(cap: int) -> JudgeReply:
        return judge.chat(role=JUDGE_ROLE, messages=messages, max_tokens=cap, **extra)  # type: ignore[call-arg]

    result = ask(max_tokens)
    calls = 1
    flags: set[str] = set()
    if _cut_off(result):
        flags.add("judge_truncated")
        if undecided(result.text or ""):
            result = ask(max_tokens * TRUNCATED_RETRY_FACTOR)
            calls += 1
    if result.text is None:
        flags.add("parse_error")
    # a client that does not say how it asked (a scripted judge) sent what it was given
    sent = getattr(result, "response_format", (response_format or {}).get("type"))
    return JudgeText(result.text or "", frozenset(flags), calls, sent or TEXT_FORMAT)


_PLACEHOLDER = re.compile(r"<(question|rubric_item|llm_response)>")


def fill_judge_prompt(question: str, rubric_item: str, answer: str, mode: ScorerMode) -> str:
    """BEAM's judge prompt with its slots filled as the mode says (see the module docstring)."""
    if mode == "upstream":
        return JUDGE_PROMPT.replace("<rubric_item>", rubric_item).replace("<llm_response>", answer)
    if mode == "default":
        values = {"question": question, "rubric_item": rubric_item, "llm_response": answer}
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], JUDGE_PROMPT)
    raise ValueError(f"unknown scorer mode {mode!r}")


def parse_judge_json(reply: str) -> dict[str, Any]:
    """The JSON object of a judge reply; ``ValueError`` when there is none.

    The model layer's one JSON-from-text parser (:func:`pytest_beam.llm.structured.extract_json_object`):
    a fenced block first, else the first valid JSON object anywhere in the text. It reads every
    reply upstream's ``parse_json_response`` reads, and also the ones upstream's non-greedy regex
    cannot (a nested object, a stray brace before the verdict) where upstream would fall back to
    ``json_repair``; it never guesses at text that is not valid JSON.
    """
    return extract_json_object(reply)


def _numeric(value: Any) -> float | None:
    """A JSON number or numeric string as a finite float; None otherwise (bools are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class Verdict:
    """What a judge reply says for one item: its score, whether it parsed, and its raw parts."""

    score: float
    ok: bool
    judge_score: Any
    reason: str | None
    out_of_range: bool = False


def read_verdict(reply: str, mode: ScorerMode) -> Verdict:
    """The item score a judge reply gives under ``mode`` (see the module docstring); ``ok`` is
    False when it does not parse (the item then scores 0 and the question is flagged)."""
    try:
        data = parse_judge_json(reply)
    except ValueError:
        data = None
    judge_score: Any = None
    reason: str | None = None
    number: float | None = None
    if isinstance(data, dict):
        judge_score = data.get("score")
        raw_reason = data.get("reason")
        reason = raw_reason if isinstance(raw_reason, str) else (None if raw_reason is None else json.dumps(raw_reason))
        number = _numeric(judge_score)
    if number is not None:
        if mode == "upstream":
            # upstream: int(response['score']) -- truncation toward zero; kept even when out of range
            return Verdict(float(int(number)), True, judge_score, reason, number not in _ALLOWED_SCORES)
        if number in _ALLOWED_SCORES:
            return Verdict(number, True, judge_score, reason)
    return Verdict(0.0, False, judge_score, reason)


def score_item(
    question: str, rubric_item: str, answer: str, judge: JudgeModel, mode: ScorerMode, repeat: int = 0
) -> tuple[ItemScore, set[str], int]:
    """Judge one rubric item (``repeat``: which judge run; two calls when cut off). Returns the item, its flags and the calls."""
    prompt = fill_judge_prompt(question, rubric_item, answer, mode)
    asked = ask_judge(judge, [{"role": "user", "content": prompt}], repeat=repeat,
                      parses=lambda text: read_verdict(text, mode).ok)
    reply = asked.text
    flags: set[str] = set(asked.flags)
    verdict = read_verdict(reply, mode)
    score, ok, judge_score, reason = verdict.score, verdict.ok, verdict.judge_score, verdict.reason
    if verdict.out_of_range:
        flags.add("score_out_of_range")
    if not ok:
        flags.add("parse_error")

    if not isinstance(judge_score, (int, float, str)) or isinstance(judge_score, bool):
        judge_score = None if judge_score is None else json.dumps(judge_score)
    elif isinstance(judge_score, float) and not math.isfinite(judge_score):
        judge_score = str(judge_score)
    item = ItemScore(
        rubric_item=rubric_item,
        score=score,
        judge_score=judge_score,
        reason=reason,
        reply=reply,
        parsed=ok,
        reply_format=asked.reply_format,
    )
    return item, flags, asked.calls


def require_rubric(question: ProbingQuestion) -> list[str]:
    """The question's rubric; ``ValueError`` when it is empty (there is nothing to score against)."""
    if not question.rubric:
        raise ValueError(f"question {question.id} has an empty rubric; nothing to score against")
    return list(question.rubric)


def score_rubric(question: ProbingQuestion, answer: str, judge: JudgeModel, mode: ScorerMode,
                 judge_runs: int = 1) -> QuestionScore:
    """Score an answer item by item against the question's rubric; question score = mean of items.

    With ``judge_runs`` N > 1 every item is judged N times and scores the mean of its repeats.
    """
    from .repeats import judge_repeatedly

    require_rubric(question)
    items: list[ItemScore] = []
    flags: set[str] = set()
    calls = 0
    for rubric_item in question.rubric:
        item, item_flags, item_calls = judge_repeatedly(
            lambda r, ri=rubric_item: score_item(question.question, ri, answer, judge, mode, repeat=r), judge_runs)
        items.append(item)
        flags |= item_flags
        calls += item_calls
    return QuestionScore(
        question_id=question.id,
        ability=question.ability,
        mode=mode,
        score=sum(i.score for i in items) / len(items),
        items=items,
        flags=sorted(flags),
        judge_calls=calls,
    )

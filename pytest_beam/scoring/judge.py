"""BEAM's judge, the mechanics every scoring profile shares: ask, read the verdict, fill the prompt.

How a verdict turns into a score -- which slots of the prompt are filled, what a 0.5 counts
for, what an unparseable reply means -- is each profile's own rule (``profiles.py``,
``beam_profiles.py``, ``omnimemeval.py``; see ``../shared/beam/upstream-scorer.md``). Here: the
judge protocol, the verdict's JSON schema sent beside the unchanged prompt, one question to the
judge with its retry when the reply is cut off by its token cap (flag ``judge_truncated``), and the
one JSON-from-text reader. Errors the judge model raises propagate untouched (the harness turns them
into a test error, never a silent 0); a reply with no text reads as "" and flags ``parse_error``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from ..data.records import ProbingQuestion
from ..llm.structured import extract_json_object
from ..llm.wire import JsonObject, ResponseFormat, WireMessage
from .prompts import JUDGE_PROMPT

__all__ = [
    "JUDGE_ROLE",
    "JudgeModel",
    "JudgeReply",
    "JudgeText",
    "ask_judge",
    "fill_question_and_answer",
    "fill_rubric_and_answer",
    "judge_number",
    "parse_judge_json",
    "require_rubric",
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
        messages: list[WireMessage],
        max_tokens: int | None = None,
        response_format: ResponseFormat | None = None,
        repeat: int = 0,
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
JUDGE_FORMAT: ResponseFormat = {"type": "json_schema", "json_schema": {
    "name": "beam_verdict", "strict": False, "schema": {
    "type": "object",
    "properties": {"score": {"type": "number", "enum": [1.0, 0.5, 0.0]}, "reason": {"type": "string"}},
    "required": ["score", "reason"]}}}
CLASSIFIER_FORMAT: ResponseFormat = {"type": "json_schema", "json_schema": {
    "name": "beam_same_event", "strict": False, "schema": {
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


class JudgeCallOptions(TypedDict, total=False):
    """What a judge call may be asked beyond its messages and cap (``JudgeModel.chat``'s keywords)."""

    response_format: ResponseFormat
    repeat: int
    accept: Callable[[str | None], bool]


def ask_judge(judge: JudgeModel, messages: list[WireMessage], *, max_tokens: int = JUDGE_MAX_TOKENS,
              repeat: int = 0, undecided: Callable[[str], bool] = lambda text: True,
              response_format: ResponseFormat | None = JUDGE_FORMAT,
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
    extra: JudgeCallOptions = {"accept": lambda text: text is not None and parses(text)}
    if repeat:  # repeat 0 is the call as it always was: not named, as a judge of its own may not know it
        extra["repeat"] = repeat
    if response_format is not None:
        extra["response_format"] = response_format

    def ask(cap: int) -> JudgeReply:
        return judge.chat(role=JUDGE_ROLE, messages=messages, max_tokens=cap, **extra)

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
    sent = getattr(result, "response_format", response_format.get("type") if response_format else None)
    return JudgeText(result.text or "", frozenset(flags), calls, sent or TEXT_FORMAT)


_PLACEHOLDER = re.compile(r"<(question|rubric_item|llm_response)>")


def fill_question_and_answer(question: str, rubric_item: str, answer: str) -> str:
    """BEAM's judge prompt with its three slots filled in one pass: text put into one slot is
    never re-scanned for another slot's marker."""
    values = {"question": question, "rubric_item": rubric_item, "llm_response": answer}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], JUDGE_PROMPT)


def fill_rubric_and_answer(rubric_item: str, answer: str) -> str:
    """The prompt as BEAM's own code fills it: ``<question>`` left literal, two chained
    ``str.replace`` calls (``<rubric_item>`` first, so an item quoting ``<llm_response>`` is filled too)."""
    return JUDGE_PROMPT.replace("<rubric_item>", rubric_item).replace("<llm_response>", answer)


def parse_judge_json(reply: str) -> JsonObject:
    """The JSON object of a judge reply; ``ValueError`` when there is none.

    The model layer's one JSON-from-text parser (:func:`pytest_beam.llm.structured.extract_json_object`):
    a fenced block first, else the first valid JSON object anywhere in the text. It reads every
    reply upstream's ``parse_json_response`` reads, and also the ones upstream's non-greedy regex
    cannot (a nested object, a stray brace before the verdict) where upstream would fall back to
    ``json_repair``; it never guesses at text that is not valid JSON.
    """
    return extract_json_object(reply)


def judge_number(value: Any) -> float | None:
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


def require_rubric(question: ProbingQuestion) -> list[str]:
    """The question's rubric; ``ValueError`` when it is empty (there is nothing to score against)."""
    if not question.rubric:
        raise ValueError(f"question {question.id} has an empty rubric; nothing to score against")
    return list(question.rubric)

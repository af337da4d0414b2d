"""A scripted judge model for the scorer's tests: implements ``JudgeModel`` without any network."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pytest_beam.data.records import ProbingQuestion


@dataclass(frozen=True)
class Reply:
    text: str | None
    usage: Any = None


@dataclass
class Call:
    role: str
    messages: list[dict[str, str]]
    max_tokens: int | None
    response_format: Any


Responder = Callable[[list[dict[str, str]]], "str | BaseException | None"]


@dataclass
class ScriptedJudge:
    """Answers each call with ``respond(messages)``; an exception returned is raised instead."""

    respond: Responder
    calls: list[Call] = field(default_factory=list)

    def chat(self, *, role, messages, max_tokens=None, response_format=None, accept=None):
        self.calls.append(Call(role, [dict(m) for m in messages], max_tokens, response_format))
        out = self.respond(messages)
        if isinstance(out, BaseException):
            raise out
        return Reply(out)

    @property
    def prompts(self) -> list[str]:
        return [c.messages[-1]["content"] for c in self.calls]


def replies(*texts: str | BaseException | None) -> ScriptedJudge:
    """A judge that gives these replies in order (and fails the test if asked once more)."""
    queue = list(texts)

    def respond(messages):
        assert queue, "the judge was called more often than scripted"
        return queue.pop(0)

    return ScriptedJudge(respond)


_USER = re.compile(r"First snippet: (.*) \n\n {23}Second snippet: (.*)\n {20}\Z", re.DOTALL)


def snippets(messages: list[dict[str, str]]) -> tuple[str, str]:
    """(event, line) back out of a binary-classifier call."""
    assert [m["role"] for m in messages] == ["system", "user"]
    found = _USER.match(messages[1]["content"])
    assert found, messages[1]["content"]
    return found.group(1), found.group(2)


def line_for(label: str) -> str:
    return f"event {label}"


def letter_judge(yes: str = "YES", no: str = "NO") -> ScriptedJudge:
    """A yes/no judge that says YES exactly when the line (stripped) is ``line_for(event)``."""

    def respond(messages):
        event, line = snippets(messages)
        return yes if line.strip() == line_for(event) else no

    return ScriptedJudge(respond)


def question(
    ability: str, rubric: Iterable[str], text: str = "What happened, in order?", index: int = 0
) -> ProbingQuestion:
    return ProbingQuestion(
        conversation_id="1",
        ability=ability,
        index=index,
        question=text,
        rubric=tuple(rubric),
        source_message_ids=(),
    )


def judge_json(score: Any, reason: str = "because") -> str:
    import json

    return json.dumps({"score": score, "reason": reason})

"""A scripted model for whole BEAM runs: extraction, resolution, the agent and the judge.

It answers by request content, deterministically, so a run of the lite set against it is
repeatable. It is a test double for the model only; its answers and scores prove nothing about
quality. The agent side searches, reads what the search returned, then answers with the text
scripted for the question; the judge gives 1.0 to a rubric item whose key words the answer
contains and 0 otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.model_server import Reply, tool_call

LITE_ANSWERS = {
    "Which days did I say my kids have their afterschool activities at their school?":
        "Your kids' afterschool activities are on Tuesdays and Thursdays.",
    "How many scenes had I filmed in total by July 5 and how many were left to film after that?":
        "By July 5 you had filmed 12 of 16 scenes, so 4 scenes were left to film.",
}
_TAG = re.compile(r"\[message (\d+), (user|assistant)\] ([^\n]*)")
_WORD = re.compile(r"[A-Za-z0-9]+")


def _schema_name(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name")


def _text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))


def extraction(body: dict[str, Any]) -> dict[str, Any]:
    """One Topic and one Fact per tagged message: the first sentence, linked to its message."""
    statements, entities = [], [{"type": "Person", "name": "The user", "description": "the chat's user"}]
    for mid, role, line in _TAG.findall(body["messages"][-1]["content"]):
        sentence = re.split(r"(?<=[.!?])\s", line.strip(), maxsplit=1)[0][:280]
        if role == "user" and sentence:
            statements.append({"type": "Fact", "text": sentence, "about": ["The user"], "message_ids": [int(mid)]})
    return {"entities": entities, "statements": statements}


class ScriptedBeamModel:
    def __init__(self, answers: dict[str, str] | None = None) -> None:
        self.answers = dict(LITE_ANSWERS if answers is None else answers)

    def question_of(self, body: dict[str, Any]) -> str:
        for m in body.get("messages", []):
            match = re.search(r"Question: (.+)", str(m.get("content") or ""))
            if match:
                return match.group(1).strip()
        return ""

    def answer_for(self, body: dict[str, Any]) -> str:
        return self.answers.get(self.question_of(body), "The chat never says.")

    def __call__(self, body: dict[str, Any]) -> Reply | dict | str:
        schema = _schema_name(body)
        text = _text(body)
        if schema == "Extraction":
            return Reply.json_object(extraction(body))
        if schema in ("ResolutionReply", "UpdateReply"):
            return Reply.json_object({"decisions": []})
        if "You are an expert evaluator" in text:
            return Reply.say(json.dumps(self.judge(text)))
        if "You are a binary classifier" in text:
            first = re.search(r"First snippet: (.*)", text)
            second = re.search(r"Second snippet: (.*)", text)
            same = first and second and first.group(1).strip().lower() in second.group(1).lower()
            return Reply.say("YES" if same else "NO")
        if body.get("tools"):
            return self.agent_step(body)
        if schema == "AgentAction":  # the hits are enough: the answer is asked for next, in plain text
            return Reply.json_object({"tool": None, "arguments": None})
        return Reply.say(self.answer_for(body))

    def agent_step(self, body: dict[str, Any]) -> Reply:
        tool_messages = [m for m in body["messages"] if m.get("role") == "tool"]
        if not tool_messages:
            return Reply.calls(tool_call("hybrid_search", {"query": self.question_of(body), "limit": 5}, id="call_1"))
        if len(tool_messages) == 1:
            ids = sorted({int(i) for i in re.findall(r"\"message_ids?\":\s*\[?(\d+)", tool_messages[0]["content"])})
            return Reply.calls(tool_call("read_messages", {"ids": ids[:5]}, id="call_2"))
        return Reply.say(self.answer_for(body))

    def judge(self, prompt: str) -> dict[str, Any]:
        item = re.search(r"RUBRIC CRITERION \(what to check\): (.*)", prompt).group(1)
        answer = prompt.split("RESPONSE TO EVALUATE:", 1)[1].split("## EVALUATION RUBRIC", 1)[0].lower()
        wanted = item.split(":", 1)[-1]
        keys = [w.lower() for w in _WORD.findall(wanted) if len(w) > 3 or w.isdigit()]
        hit = all(k in answer for k in keys) if keys else False
        return {"score": 1.0 if hit else 0.0, "reason": f"key words {keys} {'found' if hit else 'missing'}"}

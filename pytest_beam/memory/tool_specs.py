"""What the agent may call: each tool's OpenAI ``tools`` spec and the checks of its arguments.

The specs quote the limits (row cap, timeout, messages per call) so the model knows them; an
argument that fails a check raises :class:`ToolArgumentError`, whose message goes back to the
agent as the tool's result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

from ..services.access import AGENT_READS, ReadLimits

if TYPE_CHECKING:
    from ..llm.wire import FunctionSpec, JsonObject


@dataclass(frozen=True)
class ToolLimits:
    max_result_chars: int = 6000
    snippet_chars: int = 200
    statement_chars: int = 400
    message_chars: int = 2500  # one message read alone
    read_chars: int = 2000  # the text of all messages of one read_messages call, shared evenly
    max_messages: int = 10
    max_search_hits: int = 25
    max_statements: int = 60
    max_entities: int = 3
    max_per_session: int = 5  # topic_sessions: user turns per session at most
    outline_chars: int = 160  # session_outline: the head of each user turn
    reads: ReadLimits = AGENT_READS  # every read of every tool: timeout and row cap
    cypher_max_rows: int = 50  # the Cypher tool shows fewer rows than the others may read
    cypher_value_chars: int = 500


class ToolArgumentError(ValueError):
    """The agent called a tool with bad arguments; the message goes back to it."""


@overload
def arg_str(args: JsonObject, name: str, required: Literal[True] = True, max_len: int = 1000) -> str: ...


@overload
def arg_str(args: JsonObject, name: str, required: bool, max_len: int = 1000) -> str | None: ...


def arg_str(args: JsonObject, name: str, required: bool = True, max_len: int = 1000) -> str | None:
    """The argument stripped and cut to ``max_len``; a required one missing or blank is an error."""
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ToolArgumentError(f"argument '{name}' (a non-empty string) is required")
        return None
    if not isinstance(value, str):
        raise ToolArgumentError(f"argument '{name}' must be a string, not {type(value).__name__}")
    return value.strip()[:max_len]


@overload
def arg_int(args: JsonObject, name: str, default: int, lo: int, hi: int) -> int: ...


@overload
def arg_int(args: JsonObject, name: str, default: None, lo: int, hi: int) -> int | None: ...


def arg_int(args: JsonObject, name: str, default: int | None, lo: int, hi: int) -> int | None:
    """The argument as an integer clamped to ``lo..hi``; missing or null is ``default``."""
    value = args.get(name)
    if value is None:  # missing, or null (a small model writes "limit": null)
        value = default
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolArgumentError(f"argument '{name}' must be an integer")
    return max(lo, min(hi, value))


def _function(name: str, description: str, properties: JsonObject,
              required: list[str] | None = None) -> FunctionSpec:
    """One tool in OpenAI ``tools`` format (key order fixed: the specs are part of replayed requests)."""
    parameters: JsonObject = {"type": "object", "properties": properties}
    if required is not None:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    return {"name": name, "description": description, "parameters": parameters}


def hybrid_search_spec(limits: ToolLimits) -> FunctionSpec:
    return _function(
        "hybrid_search",
        (
            "Search the whole chat by meaning and by keywords at once (full-text + vector search, "
            "fused). Searches messages and the statements extracted from them. Returns the best "
            "hits first, each with its message id(s), session number and date, and a snippet. "
            "Use read_messages afterwards for the full text of a message."),
        {
            "query": {"type": "string", "description": "What to look for, in natural words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": limits.max_search_hits,
                      "description": "How many hits to return (default 10)."},
            "kind": {"type": "string", "enum": ["any", "messages", "statements"],
                     "description": "Search messages, statements, or both (default any)."},
        }, required=["query"])


def entity_statements_spec(limits: ToolLimits) -> FunctionSpec:
    return _function(
        "entity_statements",
        (
            "Everything stated about one entity (a person, place, organization, tool, topic or "
            "event), found by name: its statements in chat order, current and superseded, each "
            "with its session and date, its message ids, and its SUPERSEDES / CONTRADICTS links. "
            "Use it to see how a fact changed over time; the newest current statement is the "
            "latest value."),
        {
            "name": {"type": "string", "description": "The entity's name, e.g. 'Flask' or 'my sister'."},
        }, required=["name"])


def timeline_spec(limits: ToolLimits) -> FunctionSpec:
    return _function(
        "timeline",
        (
            "A timeline for a topic or entity: the events and statements about it, ordered by "
            "session date and message order, each with its session, date and message ids. Use it "
            "for questions about order, change over time, or what happened first or last."),
        {
            "topic": {"type": "string", "description": "The topic or entity, e.g. 'job search'."},
        }, required=["topic"])


def standing_rules_spec(limits: ToolLimits) -> FunctionSpec:
    return _function(
        "standing_rules",
        (
            "The standing rules the user set in the chat: instructions (how to answer, e.g. "
            "'always give code examples in Python') and preferences (what the user likes or "
            "dislikes). Give a topic to get the rules triggered by it, or no topic for all rules. "
            "The rules must be followed in the answer; a superseded rule no longer applies."),
        {
            "topic": {"type": "string", "description": "The topic of the question (optional)."},
        })


def topic_sessions_spec(limits: ToolLimits) -> FunctionSpec:
    return _function(
        "topic_sessions",
        (
            "A topic across every session, in chat order: in each session the user's turns that "
            "match the topic best, each with the assistant's reply to it. Use it for questions "
            "about order, change over time, progress or a summary, whose answer is spread over "
            "sessions."),
        {
            "topic": {"type": "string", "description": "The topic, in natural words."},
            "per_session": {"type": "integer", "minimum": 1, "maximum": limits.max_per_session,
                            "description": "User turns per session (default 3)."},
            "replies": {"type": "boolean", "description": "Show the assistant's replies (default true)."},
        }, required=["topic"])


def session_outline_spec(limits: ToolLimits) -> FunctionSpec:
    return _function(
        "session_outline",
        (
            "The outline of one session: every user turn in order, each as [message id, its first "
            "words]. Use it to see everything the user brought up in a session."),
        {"session": {"type": "integer", "description": "The session number."}}, required=["session"])


def read_messages_spec(limits: ToolLimits) -> FunctionSpec:
    return _function(
        "read_messages",
        (
            "The exact text of messages, by id (a list) or by an id range (from_id..to_id, "
            f"inclusive), at most {limits.max_messages} messages per call, each with its role, "
            f"session and date. One message shows up to {limits.message_chars} characters; several "
            f"share {limits.read_chars}, so ask for one id to read a long message. Cut text ends "
            "with a marker."),
        {
            "ids": {"type": "array", "items": {"type": "integer"}, "description": "Message ids."},
            "from_id": {"type": "integer", "description": "First id of a range."},
            "to_id": {"type": "integer", "description": "Last id of a range (inclusive)."},
        })


def cypher_spec(limits: ToolLimits) -> FunctionSpec:
    return _function(
        "cypher",
        (
            "Run one read-only Cypher query on the graph (writes are refused by the database). "
            f"At most {limits.cypher_max_rows} rows; {limits.reads.timeout_s:g} s timeout. "
            "Schema: (:Session {number, date}); (:Message {id, role, text, order, session})"
            "-[:IN_SESSION]->(:Session); (:Statement:Fact|Instruction|Preference|Measure {id, text, "
            "subject, value, unit, session, superseded, superseded_in_session})-[:FROM_MESSAGE]->"
            "(:Message), -[:STATED_IN]->(:Session), -[:ABOUT]->(:Entity:Person|Place|Organization|"
            "Tool|Topic|Event {id, name, norm_name, summary, date}); (newer)-[:SUPERSEDES]->(older); "
            "(a)-[:CONTRADICTS]->(b); (rule)-[:TRIGGERED_BY]->(:Topic); (:Chunk {id, index, session, "
            "message_ids})-[:CONTAINS]->(:Message); (:Entity)-[:MENTIONED_IN]->(:Chunk). "
            "Use it for counts and questions the other tools cannot express."),
        {"query": {"type": "string", "description": "A read-only Cypher query."}}, required=["query"])


def tool_specs(limits: ToolLimits) -> dict[str, FunctionSpec]:
    """Every tool's spec by name, in the order the agent sees them."""
    return {"hybrid_search": hybrid_search_spec(limits), "entity_statements": entity_statements_spec(limits),
            "timeline": timeline_spec(limits), "standing_rules": standing_rules_spec(limits),
            "topic_sessions": topic_sessions_spec(limits), "session_outline": session_outline_spec(limits),
            "read_messages": read_messages_spec(limits), "cypher": cypher_spec(limits)}

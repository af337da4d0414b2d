"""The agent's tools over one conversation's graph: read-only, bounded, deterministic.

Every tool takes a dict of arguments (validated here, errors returned to the agent as text),
runs parametrised Cypher (the one exception is the ``cypher`` tool, whose query is the agent's
own and runs in a READ transaction, so the server refuses any write) and returns a
:class:`ToolResult`: compact JSON text no longer than ``ToolLimits.max_result_chars``, plus the
ids of the messages that text shows (for the trace and evidence recall).

Determinism: every list is ordered with tie-breakers, JSON is written with a fixed key order and
no timestamps, so the same graph and the same arguments give the same text byte for byte (model
replies are recorded and replayed keyed by the exact request).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .graph_schema import RULE_TYPES, STATEMENT_TYPES
from .names import lookup_forms
from ..services.access import AGENT_READS, ReadLimits, run_read
from .search import Embedder, SearchHit, _id_key, _iso, _read, fulltext_search, hybrid_search

CUT_MARKER = "…[cut: {n} more characters]"


@dataclass(frozen=True)
class ToolLimits:
    max_result_chars: int = 6000
    snippet_chars: int = 300
    statement_chars: int = 400
    message_chars: int = 2500
    max_messages: int = 10
    max_search_hits: int = 25
    max_statements: int = 60
    max_entities: int = 3
    reads: ReadLimits = AGENT_READS  # every read of every tool: timeout and row cap
    cypher_max_rows: int = 50  # the Cypher tool shows fewer rows than the others may read
    cypher_value_chars: int = 500


@dataclass
class ToolResult:
    text: str
    message_ids: list[int] = field(default_factory=list)
    is_error: bool = False

    @property
    def chars(self) -> int:
        return len(self.text)


class ToolArgumentError(ValueError):
    """The agent called a tool with bad arguments; the message goes back to it."""


def cut(text: str | None, limit: int) -> str:
    """``text`` no longer than about ``limit`` characters, with a visible marker when cut."""
    text = text or ""
    if len(text) <= limit:
        return text
    return text[:limit] + CUT_MARKER.format(n=len(text) - limit)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _json_default(value: Any) -> Any:
    iso = _iso(value)
    return iso if iso is not None else str(value)


def _bounded(header: dict[str, Any], items: list[dict[str, Any]], limit: int, items_key: str = "results",
             drop_order: list[int] | None = None) -> tuple[str, list[dict[str, Any]]]:
    """JSON of ``header`` plus as many ``items`` as fit in ``limit`` characters.

    Items are dropped in ``drop_order`` (indexes; default: from the end) and the count of
    dropped items is stated in the result, so the agent knows to narrow its request.
    """
    keep = list(range(len(items)))
    order = list(drop_order) if drop_order is not None else list(reversed(keep))
    dropped = 0
    while True:
        shown = [items[i] for i in keep]
        doc = dict(header)
        doc[items_key] = shown
        if dropped:
            doc["omitted"] = f"{dropped} more item(s) did not fit; narrow the request"
        text = _dumps(doc)
        if len(text) <= limit or not keep:
            if len(text) > limit:
                text = cut(text, limit)
            return text, shown
        victim = order.pop(0)
        keep.remove(victim)
        dropped += 1


def _ids_in(items: list[dict[str, Any]], *keys: str) -> list[int]:
    ids: set[int] = set()
    for item in items:
        for key in keys:
            value = item.get(key)
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, list):
                ids.update(v for v in value if isinstance(v, int))
    return sorted(ids)


def _first_session(pairs: list[Any]) -> tuple[int | None, str | None]:
    pairs = sorted((p for p in pairs if p and p[0] is not None), key=lambda p: p[0])
    return (pairs[0][0], _iso(pairs[0][1])) if pairs else (None, None)


def _sources(pairs: list[Any]) -> list[int]:
    return [int(i) for _, i in sorted((o if o is not None else i, i) for o, i in pairs if i is not None)]


# --- argument helpers -------------------------------------------------------------------------

def _arg_str(args: dict[str, Any], name: str, required: bool = True, max_len: int = 1000) -> str | None:
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ToolArgumentError(f"argument '{name}' (a non-empty string) is required")
        return None
    if not isinstance(value, str):
        raise ToolArgumentError(f"argument '{name}' must be a string, not {type(value).__name__}")
    return value.strip()[:max_len]


def _arg_int(args: dict[str, Any], name: str, default: int | None, lo: int, hi: int) -> int | None:
    value = args.get(name, default)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolArgumentError(f"argument '{name}' must be an integer")
    return max(lo, min(hi, value))


# --- the tools --------------------------------------------------------------------------------

_STATEMENT_PROJECTION = """
RETURN s.id AS id, s.text AS text, s.superseded AS superseded,
       s.superseded_in_session AS superseded_in_session, s.session AS node_session,
       [l IN labels(s) WHERE l IN $stypes][0] AS type,
       [(s)-[:STATED_IN]->(ss:Session) | [ss.number, ss.date]] AS sessions,
       [(s)-[:FROM_MESSAGE]->(m:Message) | [m.order, m.id]] AS sources,
       [(s)-[:SUPERSEDES]->(o:Statement) | o.id] AS supersedes,
       [(n:Statement)-[:SUPERSEDES]->(s) | n.id] AS superseded_by,
       [(s)-[:CONTRADICTS]-(c:Statement) | c.id] AS contradicts,
       [(s)-[:ABOUT]->(x:Entity) | x.name] AS about,
       [(s)-[:TRIGGERED_BY]->(t:Topic) | t.name] AS triggers
"""

_ENTITY_MATCH = """
MATCH (e:Entity)
WHERE e.norm_name IN $norms OR toLower(e.name) = $lower OR toLower(e.name) CONTAINS $lower
   OR (e.norm_name IS NOT NULL AND e.norm_name CONTAINS $norm AND size($norm) >= 3)
WITH e, CASE WHEN e.norm_name IN $norms OR toLower(e.name) = $lower THEN 0 ELSE 1 END AS exact
RETURN e.id AS id, e.name AS name, e.summary AS summary, e.date AS date,
       [l IN labels(e) WHERE l <> 'Entity'][0] AS type, exact
ORDER BY exact, size(e.name), e.name, e.id
LIMIT $limit
"""


class ToolBox:
    """The tools for one conversation's graph. ``specs()`` gives them in OpenAI ``tools``
    format; ``call(name, arguments)`` runs one and never raises for the agent's mistakes
    (bad arguments, a Cypher error): those come back as text with ``is_error``. Database
    outages and other infrastructure errors do raise."""

    def __init__(self, driver: Any, database: str, embedder: Embedder | None = None,
                 limits: ToolLimits | None = None,
                 deadline: Callable[[], float | None] | None = None) -> None:
        self.driver = driver
        self.database = database
        self.embedder = embedder
        self.limits = limits or ToolLimits()
        self._deadline = deadline  # seconds left for the question, or None
        self._dates: dict[int, str | None] | None = None
        self._tools: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], ToolResult]]] = {
            "hybrid_search": (self._spec_hybrid_search(), self.hybrid_search),
            "entity_statements": (self._spec_entity_statements(), self.entity_statements),
            "timeline": (self._spec_timeline(), self.timeline),
            "standing_rules": (self._spec_standing_rules(), self.standing_rules),
            "read_messages": (self._spec_read_messages(), self.read_messages),
            "cypher": (self._spec_cypher(), self.cypher),
        }

    # -- public --------------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": spec} for spec, _ in self._tools.values()]

    def call(self, name: str, arguments: Any) -> ToolResult:
        if name not in self._tools:
            return ToolResult(f"Error: there is no tool named {name!r}. Tools: {', '.join(self._tools)}.",
                              is_error=True)
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return ToolResult(f"Error: the arguments are not valid JSON ({exc.msg}).", is_error=True)
        if not isinstance(arguments, dict):
            return ToolResult("Error: the arguments must be a JSON object.", is_error=True)
        _, fn = self._tools[name]
        try:
            return fn(arguments)
        except ToolArgumentError as exc:
            return ToolResult(f"Error in the arguments of {name}: {exc}", is_error=True)

    # -- plumbing ------------------------------------------------------------------------------

    def _limits(self) -> ReadLimits:
        """The agent's read limits, the timeout shortened to what is left of the question's time."""
        timeout = self.limits.reads.timeout_s
        left = self._deadline() if self._deadline else None
        if left is not None and timeout is not None:
            timeout = max(1.0, min(timeout, left))
        return ReadLimits(timeout_s=timeout, max_rows=self.limits.reads.max_rows)

    def _read(self, cypher: str, params: dict[str, Any]) -> list[Any]:
        return _read(self.driver, self.database, cypher, params, self._limits())

    def _session_dates(self) -> dict[int, str | None]:
        if self._dates is None:
            rows = self._read("MATCH (s:Session) RETURN s.number AS number, s.date AS date", {})
            self._dates = {r["number"]: _iso(r["date"]) for r in rows}
        return self._dates

    def _match_entities(self, name: str, limit: int) -> list[dict[str, Any]]:
        norms = lookup_forms(name)
        rows = self._read(_ENTITY_MATCH, {"norms": norms, "norm": norms[0], "lower": name.lower(),
                                          "limit": int(limit)})
        return [dict(r) for r in rows]

    def _statement_item(self, r: Any) -> dict[str, Any]:
        session, date = _first_session(r["sessions"])
        if session is None:
            session = r["node_session"]
        item: dict[str, Any] = {
            "statement_id": r["id"], "type": r["type"], "text": cut(r["text"], self.limits.statement_chars),
            "session": session, "date": date, "message_ids": _sources(r["sources"]),
            "superseded": bool(r["superseded"]),
        }
        if r["superseded_in_session"] is not None:
            item["superseded_in_session"] = r["superseded_in_session"]
        for key in ("supersedes", "superseded_by", "contradicts", "about", "triggers"):
            values = sorted({v for v in r[key] if v is not None}, key=_id_key)
            if values:
                item[key] = values
        return item

    @staticmethod
    def _chrono_key(item: dict[str, Any]) -> tuple:
        session = item.get("session")
        ids = item.get("message_ids") or []
        return (session is None, session if session is not None else 0, ids[0] if ids else 1 << 30,
                _id_key(item.get("statement_id") or item.get("event_id") or ""))

    def _statements(self, where: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        cypher = f"MATCH (s:Statement) WHERE {where} WITH DISTINCT s" + _STATEMENT_PROJECTION
        rows = self._read(cypher, {**params, "stypes": list(STATEMENT_TYPES)})
        items = [self._statement_item(r) for r in rows]
        items.sort(key=self._chrono_key)
        return items

    # -- hybrid_search -------------------------------------------------------------------------

    def _spec_hybrid_search(self) -> dict[str, Any]:
        return {
            "name": "hybrid_search",
            "description": (
                "Search the whole chat by meaning and by keywords at once (full-text + vector search, "
                "fused). Searches messages and the statements extracted from them. Returns the best "
                "hits first, each with its message id(s), session number and date, and a snippet. "
                "Use read_messages afterwards for the full text of a message."),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in natural words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": self.limits.max_search_hits,
                              "description": "How many hits to return (default 10)."},
                    "kind": {"type": "string", "enum": ["any", "messages", "statements"],
                             "description": "Search messages, statements, or both (default any)."},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        }

    def hybrid_search(self, args: dict[str, Any]) -> ToolResult:
        query = _arg_str(args, "query")
        limit = _arg_int(args, "limit", 10, 1, self.limits.max_search_hits)
        kind = args.get("kind") or "any"
        if kind not in ("any", "messages", "statements"):
            raise ToolArgumentError("argument 'kind' must be 'any', 'messages' or 'statements'")
        hits = hybrid_search(self.driver, self.database, query, self.embedder, limit=limit, kind=kind,
                             limits=self._limits())
        items = [self._hit_item(rank, h) for rank, h in enumerate(hits, 1)]
        text, shown = _bounded({"query": query}, items, self.limits.max_result_chars)
        if not items:
            text = _dumps({"query": query, "results": [], "note": "nothing found; try other words"})
        return ToolResult(text, _ids_in(shown, "message_id", "message_ids"))

    def _hit_item(self, rank: int, hit: SearchHit) -> dict[str, Any]:
        if hit.kind == "message":
            return {"rank": rank, "kind": "message", "message_id": hit.id, "role": hit.role,
                    "session": hit.session, "date": hit.date, "snippet": cut(hit.text, self.limits.snippet_chars)}
        return {"rank": rank, "kind": "statement", "statement_id": hit.id, "type": hit.statement_type,
                "session": hit.session, "date": hit.date, "superseded": bool(hit.superseded),
                "message_ids": hit.message_ids, "snippet": cut(hit.text, self.limits.snippet_chars)}

    # -- entity_statements ---------------------------------------------------------------------

    def _spec_entity_statements(self) -> dict[str, Any]:
        return {
            "name": "entity_statements",
            "description": (
                "Everything stated about one entity (a person, place, organization, tool, topic or "
                "event), found by name: its statements in chat order, current and superseded, each "
                "with its session and date, its message ids, and its SUPERSEDES / CONTRADICTS links. "
                "Use it to see how a fact changed over time; the newest current statement is the "
                "latest value."),
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The entity's name, e.g. 'Flask' or 'my sister'."},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        }

    def entity_statements(self, args: dict[str, Any]) -> ToolResult:
        name = _arg_str(args, "name", max_len=200)
        entities = self._match_entities(name, self.limits.max_entities)
        if not entities:
            return ToolResult(_dumps({"name": name, "entities": [],
                                      "note": "no entity with that name; try hybrid_search"}))
        eids = [e["id"] for e in entities]
        items = self._statements("EXISTS { (s)-[:ABOUT]->(e:Entity) WHERE e.id IN $eids }", {"eids": eids})
        items = items[-self.limits.max_statements:] if len(items) > self.limits.max_statements else items
        header = {"name": name, "entities": [
            {"entity_id": e["id"], "name": e["name"], "type": e["type"],
             "summary": cut(e["summary"], self.limits.snippet_chars)} for e in entities]}
        # When the result is too long, superseded statements go first (oldest first), then the
        # oldest current ones: the newest value is what matters most.
        drop = sorted(range(len(items)), key=lambda i: (not items[i]["superseded"], i))
        text, shown = _bounded(header, items, self.limits.max_result_chars, "statements", drop)
        return ToolResult(text, _ids_in(shown, "message_ids"))

    # -- timeline ------------------------------------------------------------------------------

    def _spec_timeline(self) -> dict[str, Any]:
        return {
            "name": "timeline",
            "description": (
                "A timeline for a topic or entity: the events and statements about it, ordered by "
                "session date and message order, each with its session, date and message ids. Use it "
                "for questions about order, change over time, or what happened first or last."),
            "parameters": {
                "type": "object",
                "properties": {
                    "topic": {"type": "string", "description": "The topic or entity, e.g. 'job search'."},
                },
                "required": ["topic"],
                "additionalProperties": False,
            },
        }

    def timeline(self, args: dict[str, Any]) -> ToolResult:
        topic = _arg_str(args, "topic", max_len=200)
        entities = self._match_entities(topic, 5)
        eids = [e["id"] for e in entities]
        if eids:
            statements = self._statements("EXISTS { (s)-[:ABOUT]->(e:Entity) WHERE e.id IN $eids }",
                                          {"eids": eids})
        else:  # no entity of that name: the statements whose text matches best
            hits = fulltext_search(self.driver, self.database, topic, 30, "statements", self._limits())
            sids = [h.id for h in hits]
            statements = self._statements("s.id IN $sids", {"sids": sids}) if sids else []
        events = self._events(eids, [s["statement_id"] for s in statements])
        items = sorted(statements + events, key=self._chrono_key)
        if len(items) > self.limits.max_statements:
            items = items[: self.limits.max_statements]
        header = {"topic": topic, "matched_entities": [e["name"] for e in entities]}
        if not items:
            header["note"] = "nothing found; try hybrid_search"
        text, shown = _bounded(header, items, self.limits.max_result_chars, "timeline")
        return ToolResult(text, _ids_in(shown, "message_ids"))

    def _events(self, eids: list[Any], sids: list[Any]) -> list[dict[str, Any]]:
        rows = self._read(
            """
            MATCH (v:Event)
            WHERE v.id IN $eids OR EXISTS { (s:Statement)-[:ABOUT]->(v) WHERE s.id IN $sids }
            RETURN v.id AS id, v.name AS name, v.summary AS summary, v.date AS stated_date,
                   [(v)-[:MENTIONED_IN]->(c:Chunk) | [c.session, c.index, c.message_ids]] AS chunks
            """, {"eids": eids, "sids": sids})
        dates = self._session_dates()
        out = []
        for r in rows:
            chunks = sorted((c for c in r["chunks"] if c and c[0] is not None),
                            key=lambda c: (c[0], c[1] if c[1] is not None else 0))
            session = chunks[0][0] if chunks else None
            first_ids = [int(i) for i in (chunks[0][2] or [])][:10] if chunks else []
            item = {"event_id": r["id"], "type": "Event", "name": r["name"],
                    "text": cut(r["summary"], self.limits.statement_chars),
                    "stated_date": _iso(r["stated_date"]), "session": session,
                    "date": dates.get(session), "message_ids": first_ids}
            out.append(item)
        return out

    # -- standing_rules ------------------------------------------------------------------------

    def _spec_standing_rules(self) -> dict[str, Any]:
        return {
            "name": "standing_rules",
            "description": (
                "The standing rules the user set in the chat: instructions (how to answer, e.g. "
                "'always give code examples in Python') and preferences (what the user likes or "
                "dislikes). Give a topic to get the rules triggered by it, or no topic for all rules. "
                "The rules must be followed in the answer; a superseded rule no longer applies."),
            "parameters": {
                "type": "object",
                "properties": {
                    "topic": {"type": "string", "description": "The topic of the question (optional)."},
                },
                "additionalProperties": False,
            },
        }

    def standing_rules(self, args: dict[str, Any]) -> ToolResult:
        topic = _arg_str(args, "topic", required=False, max_len=200)
        rule_filter = "(" + " OR ".join(f"s:{t}" for t in RULE_TYPES) + ")"
        if topic is None:
            items = self._statements(rule_filter, {})
        else:
            hits = fulltext_search(self.driver, self.database, topic, 30, "statements", self._limits())
            sids = [h.id for h in hits]
            items = self._statements(
                rule_filter + " AND (s.id IN $sids OR EXISTS { (s)-[:TRIGGERED_BY]->(t:Topic) "
                "WHERE t.norm_name IN $norms OR toLower(t.name) CONTAINS $lower "
                "OR (size($norm) >= 3 AND t.norm_name IS NOT NULL AND $norm CONTAINS t.norm_name) })",
                {"sids": sids, "norms": lookup_forms(topic), "norm": lookup_forms(topic)[0],
                 "lower": topic.lower()})
        header: dict[str, Any] = {"topic": topic}
        if not items:
            header["note"] = "no standing rule found" + (" for this topic" if topic else "")
        drop = sorted(range(len(items)), key=lambda i: (not items[i]["superseded"], i))
        text, shown = _bounded(header, items, self.limits.max_result_chars, "rules", drop)
        return ToolResult(text, _ids_in(shown, "message_ids"))

    # -- read_messages -------------------------------------------------------------------------

    def _spec_read_messages(self) -> dict[str, Any]:
        return {
            "name": "read_messages",
            "description": (
                "The exact text of messages, by id (a list) or by an id range (from_id..to_id, "
                f"inclusive), at most {self.limits.max_messages} messages per call, each with its role, "
                "session and date. Very long messages are cut with a marker."),
            "parameters": {
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "items": {"type": "integer"}, "description": "Message ids."},
                    "from_id": {"type": "integer", "description": "First id of a range."},
                    "to_id": {"type": "integer", "description": "Last id of a range (inclusive)."},
                },
                "additionalProperties": False,
            },
        }

    def read_messages(self, args: dict[str, Any]) -> ToolResult:
        raw_ids = args.get("ids") or []
        if isinstance(raw_ids, (int, str)):
            raw_ids = [raw_ids]
        if not isinstance(raw_ids, list):
            raise ToolArgumentError("argument 'ids' must be a list of integers")
        ids = []
        for value in raw_ids:
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ToolArgumentError("argument 'ids' must be a list of integers")
            ids.append(value)
        lo = _arg_int(args, "from_id", None, 0, 1 << 31)
        hi = _arg_int(args, "to_id", None, 0, 1 << 31)
        if lo is not None or hi is not None:
            lo = lo if lo is not None else hi
            hi = hi if hi is not None else lo
            if hi < lo:
                lo, hi = hi, lo
            ids.extend(range(lo, min(hi, lo + self.limits.max_messages * 4) + 1))
        if not ids:
            raise ToolArgumentError("give 'ids' or 'from_id'/'to_id'")
        wanted = sorted(set(ids))
        asked = len(wanted)
        wanted = wanted[: self.limits.max_messages]
        rows = self._read(
            """
            MATCH (m:Message) WHERE m.id IN $ids
            RETURN m.id AS id, m.role AS role, m.text AS text, m.session AS node_session,
                   [(m)-[:IN_SESSION]->(s:Session) | [s.number, s.date]] AS sessions
            ORDER BY m.id
            """, {"ids": wanted})
        items = []
        for r in rows:
            session, date = _first_session(r["sessions"])
            items.append({"message_id": r["id"], "role": r["role"],
                          "session": session if session is not None else r["node_session"],
                          "date": date, "text": cut(r["text"], self.limits.message_chars)})
        header: dict[str, Any] = {}
        found = {i["message_id"] for i in items}
        missing = [i for i in wanted if i not in found]
        if missing:
            header["not_found"] = missing
        if asked > len(wanted):
            header["note"] = f"only the first {len(wanted)} of {asked} ids were read; ask for the rest separately"
        text, shown = _bounded(header, items, self.limits.max_result_chars, "messages")
        return ToolResult(text, _ids_in(shown, "message_id"))

    # -- cypher --------------------------------------------------------------------------------

    def _spec_cypher(self) -> dict[str, Any]:
        return {
            "name": "cypher",
            "description": (
                "Run one read-only Cypher query on the graph (writes are refused by the database). "
                f"At most {self.limits.cypher_max_rows} rows; {self.limits.reads.timeout_s:g} s timeout. "
                "Schema: (:Session {number, date}); (:Message {id, role, text, order, session})"
                "-[:IN_SESSION]->(:Session); (:Statement:Fact|Instruction|Preference|Measure {id, text, "
                "subject, value, unit, session, superseded, superseded_in_session})-[:FROM_MESSAGE]->"
                "(:Message), -[:STATED_IN]->(:Session), -[:ABOUT]->(:Entity:Person|Place|Organization|"
                "Tool|Topic|Event {id, name, norm_name, summary, date}); (newer)-[:SUPERSEDES]->(older); "
                "(a)-[:CONTRADICTS]->(b); (rule)-[:TRIGGERED_BY]->(:Topic); (:Chunk {id, index, session, "
                "message_ids})-[:CONTAINS]->(:Message); (:Entity)-[:MENTIONED_IN]->(:Chunk). "
                "Use it for counts and questions the other tools cannot express."),
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "A read-only Cypher query."}},
                "required": ["query"],
                "additionalProperties": False,
            },
        }

    def cypher(self, args: dict[str, Any]) -> ToolResult:
        query = _arg_str(args, "query", max_len=5000)
        if re.search(r"\bLOAD\s+CSV\b", query, re.IGNORECASE):
            return ToolResult("Cypher error: LOAD CSV is not allowed here.", is_error=True)
        try:
            rows = run_read(self.driver, self.database, query, {}, timeout_s=self._limits().timeout_s,
                            max_rows=self.limits.cypher_max_rows)
        except Exception as exc:  # noqa: BLE001 - classified below
            if not _is_query_error(exc):
                raise
            return ToolResult(_cypher_error_text(exc), is_error=True)
        items = [_plain(row, self.limits.cypher_value_chars) for row in rows]
        columns = list(rows[0].keys()) if rows else []
        header: dict[str, Any] = {"columns": columns}
        if getattr(rows, "truncated", False):
            header["truncated"] = f"only the first {len(rows)} rows are shown (row cap)"
        text, shown = _bounded(header, items, self.limits.max_result_chars, "rows")
        ids: set[int] = set()
        _collect_message_ids(shown, ids)
        return ToolResult(text, sorted(ids))


# --- Cypher tool plumbing ---------------------------------------------------------------------

def _is_query_error(exc: BaseException) -> bool:
    """A mistake in the agent's query (syntax, a refused write, a timeout) rather than a fault
    of the infrastructure (database down), which must propagate."""
    import neo4j.exceptions as ne

    if isinstance(exc, (ne.ServiceUnavailable, ne.SessionExpired, ne.AuthError)):
        return False
    return isinstance(exc, (ne.Neo4jError, ne.ResultError,
                            TypeError, ValueError))


def _cypher_error_text(exc: BaseException) -> str:
    code = getattr(exc, "code", None) or type(exc).__name__
    message = getattr(exc, "message", None) or str(exc)
    message = " ".join(str(message).split())
    if "AccessMode" in str(code) or "read access mode" in message.lower() or "read-only" in message.lower():
        hint = " (this tool is read-only: writes are refused)"
    elif "timedout" in str(code).lower() or "timeout" in str(code).lower() or "terminated" in message.lower():
        hint = " (the query took too long; make it more selective)"
    else:
        hint = ""
    return cut(f"Cypher error{hint}: {code}: {message}", 1500)


def _plain(value: Any, limit: int) -> Any:
    """A JSON-safe, bounded, deterministic copy of a value from ``record.data()`` (nodes come
    as property maps). Embeddings are left out."""
    if isinstance(value, str):
        return cut(value, limit)
    if isinstance(value, (list, tuple)):
        if len(value) > 32 and all(isinstance(v, float) for v in value):
            return f"[{len(value)} numbers]"
        return [_plain(v, limit) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, limit) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if k != "embedding"}
    if isinstance(value, float):
        return round(value, 6)
    if value is None or isinstance(value, (bool, int)):
        return value
    iso = _iso(value)
    return iso if iso is not None else str(value)


_MESSAGE_ID_KEYS = {"message_id", "message_ids", "m.id", "msg_id", "source_message_ids"}


def _collect_message_ids(value: Any, out: set[int]) -> None:
    """Message ids in Cypher rows: a map that looks like a Message node (id, role, text), or a
    value under a message-id column name. A heuristic: the trace counts what the agent saw."""
    if isinstance(value, dict):
        if {"id", "role", "text"} <= value.keys() and isinstance(value.get("id"), int):
            out.add(value["id"])
        for key, v in value.items():
            if key.lower() in _MESSAGE_ID_KEYS:
                if isinstance(v, int) and not isinstance(v, bool):
                    out.add(v)
                elif isinstance(v, list):
                    out.update(i for i in v if isinstance(i, int) and not isinstance(i, bool))
            _collect_message_ids(v, out)
    elif isinstance(value, list):
        for v in value:
            _collect_message_ids(v, out)

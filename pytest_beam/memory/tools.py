"""The agent's tools over one conversation's graph: read-only, bounded, deterministic.

Every tool takes a dict of arguments (checked in ``tool_specs.py``, errors returned to the agent
as text), runs parametrised Cypher through the agent's read limits and returns a
:class:`ToolResult` (``tool_render.py``): compact JSON no longer than
``ToolLimits.max_result_chars``, plus the ids of the messages that text shows (for the trace and
evidence recall). The agent's own Cypher is ``cypher_tool.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..services.access import CypherParams, ReadLimits
from .cypher_tool import run_cypher_tool
from .graph_schema import RULE_TYPES, STATEMENT_TYPES
from .name_forms import lookup_forms
from .search import PER_SESSION, fulltext_search, hybrid_search, session_user_turns, topic_by_session
from .search_hits import Embedder, SearchHit, id_key, iso, read_graph
from .tool_queries import ENTITY_MATCH, STATEMENT_PROJECTION
from .tool_render import CUT_MARKER, ToolJson, ToolResult, bounded, cut, dumps, first_session, ids_in, sources
from .tool_specs import ToolArgumentError, ToolLimits, arg_int, arg_str, tool_specs

if TYPE_CHECKING:
    from neo4j import Driver

    from ..llm.wire import JsonObject, ToolSpec

__all__ = ["CUT_MARKER", "ToolArgumentError", "ToolBox", "ToolResult", "cut"]


# --- the tools --------------------------------------------------------------------------------

def openai_tools(limits: ToolLimits | None = None) -> list[ToolSpec]:
    """The tools as the agent is sent them (OpenAI ``tools`` format): no graph needed to list them."""
    return [{"type": "function", "function": spec} for spec in tool_specs(limits or ToolLimits()).values()]


class ToolBox:
    """The tools for one conversation's graph. ``specs()`` gives them in OpenAI ``tools``
    format; ``call(name, arguments)`` runs one and never raises for the agent's mistakes
    (bad arguments, a Cypher error): those come back as text with ``is_error``. Database
    outages and other infrastructure errors do raise."""

    def __init__(self, driver: Driver, database: str, embedder: Embedder | None = None,
                 limits: ToolLimits | None = None,
                 deadline: Callable[[], float | None] | None = None) -> None:
        self.driver = driver
        self.database = database
        self.embedder = embedder
        self.limits = limits or ToolLimits()
        self._deadline = deadline  # seconds left for the question, or None
        self._dates: dict[int, str | None] | None = None
        self._specs = tool_specs(self.limits)
        self._tools: dict[str, Callable[[JsonObject], ToolResult]] = {
            "hybrid_search": self.hybrid_search, "entity_statements": self.entity_statements,
            "timeline": self.timeline, "standing_rules": self.standing_rules,
            "topic_sessions": self.topic_sessions,
            "session_outline": self.session_outline,
            "read_messages": self.read_messages,
            "cypher": self.cypher,
        }

    # -- public --------------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [{"type": "function", "function": self._specs[name]} for name in self._tools]

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
        fn = self._tools[name]
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

    def _read(self, cypher: str, params: CypherParams) -> list[Any]:
        return read_graph(self.driver, self.database, cypher, params, self._limits())

    def _session_dates(self) -> dict[int, str | None]:
        if self._dates is None:
            rows = self._read("MATCH (s:Session) RETURN s.number AS number, s.date AS date", {})
            self._dates = {r["number"]: iso(r["date"]) for r in rows}
        return self._dates

    def _match_entities(self, name: str, limit: int) -> list[ToolJson]:
        norms = lookup_forms(name)
        rows = self._read(ENTITY_MATCH, {"norms": norms, "norm": norms[0], "lower": name.lower(),
                                          "limit": int(limit)})
        return [dict(r) for r in rows]

    def _statement_item(self, r: Any) -> ToolJson:
        session, date = first_session(r["sessions"])
        if session is None:
            session = r["node_session"]
        item: ToolJson = {
            "statement_id": r["id"], "type": r["type"], "text": cut(r["text"], self.limits.statement_chars),
            "session": session, "date": date, "message_ids": sources(r["sources"]),
            "superseded": bool(r["superseded"]),
        }
        if r["superseded_in_session"] is not None:
            item["superseded_in_session"] = r["superseded_in_session"]
        for key in ("supersedes", "superseded_by", "contradicts", "about", "triggers"):
            values = sorted({v for v in r[key] if v is not None}, key=id_key)
            if values:
                item[key] = values
        return item

    @staticmethod
    def _chrono_key(item: ToolJson) -> tuple:
        session = item.get("session")
        ids = item.get("message_ids") or []
        return (session is None, session if session is not None else 0, ids[0] if ids else 1 << 30,
                id_key(item.get("statement_id") or item.get("event_id") or ""))

    def _statements(self, where: str, params: CypherParams) -> list[ToolJson]:
        cypher = f"MATCH (s:Statement) WHERE {where} WITH DISTINCT s" + STATEMENT_PROJECTION
        rows = self._read(cypher, {**params, "stypes": list(STATEMENT_TYPES)})
        items = [self._statement_item(r) for r in rows]
        items.sort(key=self._chrono_key)
        return items

    # -- hybrid_search -------------------------------------------------------------------------


    def hybrid_search(self, args: JsonObject) -> ToolResult:
        query = arg_str(args, "query")
        limit = arg_int(args, "limit", 10, 1, self.limits.max_search_hits)
        kind = args.get("kind") or "any"
        if kind not in ("any", "messages", "statements"):
            raise ToolArgumentError("argument 'kind' must be 'any', 'messages' or 'statements'")
        hits = hybrid_search(self.driver, self.database, query, self.embedder, limit=limit, kind=kind,
                             limits=self._limits())
        items = [self._hit_item(h) for h in hits]
        text, shown = bounded({"query": query}, items, self.limits.max_result_chars)
        if not items:
            text = dumps({"query": query, "results": [], "note": "nothing found; try other words"})
        return ToolResult(text, ids_in(shown, "message_id", "message_ids"))

    def _hit_item(self, hit: SearchHit) -> ToolJson:
        # best first: the list's order is the rank
        if hit.kind == "message":
            return {"kind": "message", "message_id": hit.id, "role": hit.role,
                    "session": hit.session, "date": hit.date, "snippet": cut(hit.text, self.limits.snippet_chars)}
        return {"kind": "statement", "statement_id": hit.id, "type": hit.statement_type,
                "session": hit.session, "date": hit.date, "superseded": bool(hit.superseded),
                "message_ids": hit.message_ids, "snippet": cut(hit.text, self.limits.snippet_chars)}

    # -- entity_statements ---------------------------------------------------------------------


    def entity_statements(self, args: JsonObject) -> ToolResult:
        name = arg_str(args, "name", max_len=200)
        entities = self._match_entities(name, self.limits.max_entities)
        if not entities:
            return ToolResult(dumps({"name": name, "entities": [],
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
        text, shown = bounded(header, items, self.limits.max_result_chars, "statements", drop)
        return ToolResult(text, ids_in(shown, "message_ids"))

    # -- timeline ------------------------------------------------------------------------------


    def timeline(self, args: JsonObject) -> ToolResult:
        topic = arg_str(args, "topic", max_len=200)
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
        text, shown = bounded(header, items, self.limits.max_result_chars, "timeline")
        return ToolResult(text, ids_in(shown, "message_ids"))

    def _events(self, eids: list[Any], sids: list[Any]) -> list[ToolJson]:
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
                    "stated_date": iso(r["stated_date"]), "session": session,
                    "date": dates.get(session) if session is not None else None, "message_ids": first_ids}
            out.append(item)
        return out

    # -- topic_sessions ------------------------------------------------------------------------

    def topic_sessions(self, args: JsonObject) -> ToolResult:
        topic = arg_str(args, "topic", max_len=500)
        per_session = arg_int(args, "per_session", PER_SESSION, 1, self.limits.max_per_session)
        replies = args.get("replies", True)
        if not isinstance(replies, bool):
            raise ToolArgumentError("argument 'replies' must be true or false")
        hits = topic_by_session(self.driver, self.database, topic, self.embedder, per_session, replies,
                                self._limits())
        items = [{"session": h.session, "date": h.date, "message_id": h.id, "role": h.role,
                  "snippet": cut(h.text, self.limits.snippet_chars)} for h in hits]
        header: ToolJson = {"topic": topic}
        if not items:
            header["note"] = "nothing found; try hybrid_search"
        # too long: the replies go first (latest first), then the latest turns
        drop = sorted(range(len(items)), key=lambda i: (items[i]["role"] == "user", -i))
        text, shown = bounded(header, items, self.limits.max_result_chars, "messages", drop)
        return ToolResult(text, ids_in(shown, "message_id"))

    # -- session_outline -----------------------------------------------------------------------

    def session_outline(self, args: JsonObject) -> ToolResult:
        session = arg_int(args, "session", None, 0, 1 << 31)
        if session is None:
            raise ToolArgumentError("argument 'session' (a session number) is required")
        turns = session_user_turns(self.driver, self.database, session, self._limits())
        header: ToolJson = {"session": session, "date": self._session_dates().get(session)}
        items = [[h.id, cut(h.text, self.limits.outline_chars)] for h in turns]
        if not items:
            header["note"] = f"session {session} has no messages; sessions: {sorted(self._session_dates())}"
        text, shown = bounded(header, items, self.limits.max_result_chars, "user_turns")  # [message id, head]
        return ToolResult(text, sorted(int(i[0]) for i in shown))

    # -- standing_rules ------------------------------------------------------------------------


    def standing_rules(self, args: JsonObject) -> ToolResult:
        topic = arg_str(args, "topic", required=False, max_len=200)
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
        header: ToolJson = {"topic": topic}
        if not items:
            header["note"] = "no standing rule found" + (" for this topic" if topic else "")
        drop = sorted(range(len(items)), key=lambda i: (not items[i]["superseded"], i))
        text, shown = bounded(header, items, self.limits.max_result_chars, "rules", drop)
        return ToolResult(text, ids_in(shown, "message_ids"))

    # -- read_messages -------------------------------------------------------------------------


    def read_messages(self, args: JsonObject) -> ToolResult:
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
        lo = arg_int(args, "from_id", None, 0, 1 << 31)
        hi = arg_int(args, "to_id", None, 0, 1 << 31)
        lo = lo if lo is not None else hi  # one end given: a range of one message
        hi = hi if hi is not None else lo
        if lo is not None and hi is not None:
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
        # one message gets message_chars; several share read_chars (the agent asks for fewer ids,
        # or one, to see more of each): an agent's prompt grows with every read
        each = self.limits.message_chars if len(rows) <= 1 else min(
            self.limits.message_chars, max(self.limits.snippet_chars, self.limits.read_chars // len(rows)))
        items = []
        for r in rows:
            session, date = first_session(r["sessions"])
            items.append({"message_id": r["id"], "role": r["role"],
                          "session": session if session is not None else r["node_session"],
                          "date": date, "text": cut(r["text"], each)})
        header: ToolJson = {}
        found = {i["message_id"] for i in items}
        missing = [i for i in wanted if i not in found]
        if missing:
            header["not_found"] = missing
        if asked > len(wanted):
            header["note"] = f"only the first {len(wanted)} of {asked} ids were read; ask for the rest separately"
        text, shown = bounded(header, items, self.limits.max_result_chars, "messages")
        return ToolResult(text, ids_in(shown, "message_id"))

    # -- cypher --------------------------------------------------------------------------------


    def cypher(self, args: JsonObject) -> ToolResult:
        query = arg_str(args, "query", max_len=5000)
        return run_cypher_tool(self.driver, self.database, query, timeout_s=self._limits().timeout_s,
                               max_rows=self.limits.cypher_max_rows,
                               max_result_chars=self.limits.max_result_chars,
                               value_chars=self.limits.cypher_value_chars)

"""The full-text half of the search: ``db.index.fulltext.queryNodes`` on the ``searchable_text``
index. The query is built from the user's words only, each escaped for Lucene, so no text (a
question, a word of the chat) can inject Lucene syntax."""

from __future__ import annotations

import re
from typing import Any

from ..services.access import AGENT_READS, ReadLimits
from .graph_schema import FULLTEXT_INDEX
from .search_hits import KIND_FILTER, PROJECTION, SearchHit, read_graph, rows_to_hits

#: Characters with a meaning in Lucene's classic query syntax (``&&`` and ``||`` are covered by
#: their single characters).
_LUCENE_SPECIAL = set('+-&|!(){}[]^"~*?:\\/')
_LUCENE_OPERATORS = {"AND", "OR", "NOT", "TO"}
#: Question words that match half the chat and say nothing of the topic. The index analyser
#: keeps stop words, so the query drops them itself.
_STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves
""".split())
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 64


def escape_lucene(text: str) -> str:
    """Escape every Lucene special character; lower-case the boolean operators."""
    out = []
    for ch in text:
        out.append("\\" + ch if ch in _LUCENE_SPECIAL else ch)
    escaped = "".join(out)
    return " ".join(w.lower() if w in _LUCENE_OPERATORS else w for w in escaped.split(" "))


def fulltext_query(text: str, drop_stop_words: bool = True) -> str:
    """A safe Lucene query from free text: its words, escaped, OR-ed (Lucene's default).

    Returns '' when no searchable word is left (the caller then skips the full-text half).
    """
    words = _WORD.findall(text)
    kept = [w for w in words if not (drop_stop_words and w.lower() in _STOP_WORDS)]
    if not kept:  # a query of stop words only: better them than nothing
        kept = words
    seen: set[str] = set()
    terms = []
    for word in kept:
        key = word.lower()
        if key in seen:
            continue
        seen.add(key)
        terms.append(escape_lucene(key))
        if len(terms) >= MAX_QUERY_TERMS:
            break
    return " ".join(terms)


FULLTEXT_CYPHER = (
    "CALL db.index.fulltext.queryNodes($index, $query, {limit: $depth}) YIELD node, score\n"
    "WHERE {filter}\n" + PROJECTION
)


def fulltext_search(driver: Any, database: str, text: str, depth: int, kind: str = "any",
                    limits: ReadLimits = AGENT_READS) -> list[SearchHit]:
    query = fulltext_query(text)
    if not query:
        return []
    cypher = FULLTEXT_CYPHER.replace("{filter}", KIND_FILTER[kind])
    rows = read_graph(driver, database, cypher, {"index": FULLTEXT_INDEX, "query": query, "depth": int(depth)}, limits)
    return rows_to_hits(rows)

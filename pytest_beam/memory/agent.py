"""The agent: answers one question from one conversation's graph with read-only tools.

Two ways to talk to the model, chosen by ``AgentConfig.tool_mode``:

* ``"native"``: the endpoint's own tool calling (``tools`` in the request). A reply without a
  tool call is the final answer.
* ``"json"``: every step is a ``models.structured(...)`` call whose reply is an
  :class:`AgentAction` — a tool and its arguments, or none when the model has what it needs; the
  answer is then one plain-text call to a reader of the tools' results
  (``prompts.READER_TEMPLATE``). Works with any model that can return JSON (grammar-constrained
  endpoints always can).
* ``"auto"`` (default): start native, and fall back to JSON actions for this question when
  (a) the endpoint refuses the request with tools (HTTP 400/422 whose text mentions tools), or
  (b) the model's *first* native reply has no tool call. Rule (b) is sound because no memory
  question can be answered before looking at the memory: a first reply without a tool call
  means the endpoint dropped the tools silently (llama.cpp does this with a chat template
  lacking tool blocks) or the model does not call tools by itself. A model that does call tools
  is unaffected; one that answers straight away costs one extra call. The refusal in (a) is
  remembered for the client, so later questions go straight to JSON actions.
  With record/replay, use an explicit mode if the endpoint refuses tools: a refused request is
  not a recorded reply.

The first search is the harness's, not the model's: before the first model call the agent runs
``hybrid_search`` with the question's own words (``AgentConfig.first_search_hits`` hits; 0 turns it
off) and puts the call and its result in the conversation as if the model had made it. What the
model sees first is therefore never decided by its skill at choosing a tool or writing Cypher
(measured on Qwen2.5-Coder-1.5B: given the choice, it queried labels the schema does not have and
answered "I don't have enough information" with the answer in the graph). With that search in
front of it, a model may answer at once; so in ``"auto"`` mode rule (b) below applies only when
the first search is off.

Limits: ``max_steps`` model calls per question, the last call included, and ``timeout_s``. The
agent makes at most ``max_steps - 1`` calls with tools; reaching that (or the time, or an empty
reply, or an invalid action) makes one last call without tools that asks for the best answer from
what was gathered; if it gives text, that is the answer, scored as any other, with the flag
``limit_reached`` (the answer came from the last call, not from the agent's own finish); if not,
the answer is empty with the flag ``agent_failure`` (steps) or ``timeout``. The harness scores
those 0 as failures.

Model infrastructure errors (:class:`ModelEndpointError`, :class:`BudgetExceeded`,
:class:`CassetteMiss`) propagate, as do Neo4j outages: they are errors, not answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..data.records import SystemQuestion
from ..system import SystemAnswer
from .agent_json import json_loop
from .agent_native import SwitchToJson, is_refused, native_loop
from .agent_run import AgentConfig, AgentRun, first_search
from .search_hits import Embedder

if TYPE_CHECKING:
    from neo4j import Driver

    from .model_protocols import AgentModels



def answer_question(driver: Driver, database: str, question: SystemQuestion, models: AgentModels,
                    embedder: Embedder | None, config: AgentConfig | None = None) -> SystemAnswer:
    """Answer ``question`` from the graph in ``database``; see the module docstring."""
    config = config or AgentConfig()
    run = AgentRun(driver, database, question, models, embedder, config)
    first = first_search(run)
    mode = config.tool_mode
    if mode == "auto" and is_refused(models):
        run.note("json_mode", reason="endpoint refused native tools earlier")
        mode = "json"
    if mode in ("native", "auto"):
        try:
            return native_loop(run, strict=(mode == "native"), first=first)
        except SwitchToJson as switch:
            run.note("json_mode", reason=switch.reason)
    return json_loop(run, first)

"""`cognee`: Cognee (topoteretes' knowledge-graph memory) as the memory under test.

Install its environment with `pytest-beam install-system cognee` (own_env.py: Cognee pins openai < 3
and pandas < 3, pytest-beam runs on openai 3). It runs as a child process in that environment
(children/cognee_child.py) with its own stores, all files in the conversation's folder (`cognee/`:
SQLite for its relational data, LanceDB for vectors, its file-based graph), removed when the
conversation closes, and configured so that nothing leaves the machine:

- its LLM (litellm's `openai` provider) at the harness's relay, role `extraction` (metered as
  `cognee extraction`), and no connection test at start (it would cost a call);
- its embeddings (`openai` provider) at the relay's `/v1/embeddings`, named as an OpenAI model whose
  tokenizer is tiktoken's cl100k_base (seeded from the project's copy);
- telemetry off, and litellm's price table read from the package (else it fetches it).

Ingest adds each BEAM session as one text, in order (headed by its number and date: Cognee has no
clock of its own, each message tagged with its id), and runs `cognify` on it before the next.
Answers: Cognee's default search type (hybrid completion) with `only_context`, top `retrieval_k`:
Cognee retrieves, and the run's answering model answers from what it returned, with the prompt
every outside system shares. A retrieved chunk names the messages its text overlaps.
"""

from __future__ import annotations

import re
from typing import Any

from ..data.records import Document, SystemQuestion
from ..system import IngestReport, SystemAnswer, SystemContext
from .answering import DEFAULT_TOP_K, setting
from .child_process import ChildError, ChildProcess
from .outside import OutsideSystem, Transcript, plain_transcripts, remove_tree, seed_tiktoken, sources_of
from .recalled import Recalled, answer_from_recalled, harness_relay, relay_endpoint

ROLE = "extraction"
MAX_TOKENS = 2048  # per call of the library: the completion cap the relay holds it to
SEARCH_TYPE = "HYBRID_COMPLETION"  # Cognee's default search type
EMBEDDING_NAME = "openai/text-embedding-3-small"  # litellm's name; tiktoken maps it to cl100k_base


class CogneeSystem(OutsideSystem):
    """Cognee in its own environment, its files in the conversation's folder, its calls through the relay."""

    name = "cognee"

    def __init__(self, context: SystemContext, k: int | None = None) -> None:
        self.context = context
        self.k = k or setting(context, "retrieval_k", DEFAULT_TOP_K)
        self.work = context.work_dir / "cognee"
        self.child: ChildProcess | None = None
        self.transcripts: list[Transcript] = []

    def _env(self) -> dict[str, str]:
        from ..paths import cache_root

        relay, url = relay_endpoint(self.context, self.system_name, ROLE, MAX_TOKENS)
        return {
            "LLM_PROVIDER": "openai", "LLM_ENDPOINT": url, "LLM_API_KEY": "pytest-beam-relay",
            "LLM_MODEL": "openai/" + self.context.models.models.for_role(ROLE), "LLM_MAX_TOKENS": str(MAX_TOKENS),
            "EMBEDDING_PROVIDER": "openai", "EMBEDDING_ENDPOINT": url, "EMBEDDING_API_KEY": "pytest-beam-relay",
            "EMBEDDING_MODEL": EMBEDDING_NAME, "EMBEDDING_DIMENSIONS": str(relay.dimensions),
            "COGNEE_SKIP_CONNECTION_TEST": "true", "TELEMETRY_DISABLED": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "TIKTOKEN_CACHE_DIR": str(seed_tiktoken(cache_root() / "tiktoken")),
        }

    def _call(self, what: str, op: str, **payload: Any) -> Any:
        assert self.child is not None
        relay = harness_relay(self.context)
        try:
            result = self.child.request(op, **payload)
        except (ChildError, RuntimeError) as exc:
            relay.raise_failure(self.system_name, exc)
            raise RuntimeError(f"cognee {what} failed: {exc}") from exc
        relay.raise_failure(self.system_name)
        return result

    def ingest(self, documents: list[Document]) -> IngestReport:
        env = self._env()
        self.child = ChildProcess(self.system_name, "cognee", "cognee_child", self.work / "cognee.log", env)
        info = self._call("start", "start", config={
            "env": env, "data_root": str(self.work / "data"), "system_root": str(self.work / "system")})
        self.transcripts = plain_transcripts(documents)
        lost = []
        for transcript in self.transcripts:
            done = self._call(f"add and cognify (session {transcript.session})", "add", text=transcript.text)
            if done.get("lost"):
                lost.append(f"cognee: session {transcript.session}'s cognify left out: the model's replies were "
                            f"unusable after Cognee's own retries ({done['lost']}); removed from the dataset, or "
                            "the next cognify would read it again")
        notes = [f"cognee {info.get('version')}: {len(self.transcripts)} sessions added and cognified in order "
                 "(SQLite, LanceDB and its graph in the conversation's folder, model calls through the relay)", *lost]
        return IngestReport(chunks=len(self.transcripts), empty_extractions=len(lost), notes=notes)

    def recall(self, query: str) -> list[Recalled]:
        if self.child is None:
            raise RuntimeError("cognee: answer before ingest")
        found = self._call("search", "search", query=query, search_type=SEARCH_TYPE, top_k=self.k)
        out = []
        items = [item for text in context_texts(found.get("results")) for item in context_items(text)]
        for k, (section, text) in enumerate(items):
            ids, transcript = sources_of(text, self.transcripts)
            if not ids:  # an entity or a fact: the messages it quotes by their tags, if any
                ids = tuple(sorted({int(i) for i in _TAG.findall(text)}))
                transcript = next((t for t in self.transcripts if ids and ids[0] in t.message_ids), None)
            out.append(Recalled(text=text, message_ids=ids, session=transcript.session if transcript else None,
                                date=transcript.date if transcript else None, ref=f"{section} {k}"))
        return out

    def answer(self, question: SystemQuestion) -> SystemAnswer:
        recalled = self.recall(question.question)
        return answer_from_recalled(self.context.models, question, recalled, system=self.system_name,
                                    details={"k": self.k, "search": f"cognee {SEARCH_TYPE}, only_context"})

    def close(self) -> None:
        child, self.child = self.child, None
        try:
            if child is not None:
                child.close()
        finally:
            remove_tree(self.work)


def context_texts(results: Any) -> list[str]:
    """The texts of what Cognee's search returned as context (a string, or results holding strings)."""
    if isinstance(results, str):
        return [results] if results.strip() else []
    if isinstance(results, dict):
        for key in ("search_result", "context", "text", "result"):
            if key in results:
                return context_texts(results[key])
        return []
    if isinstance(results, list):
        return [t for item in results for t in context_texts(item)]
    return []


_SECTION = re.compile(r"^## (.+)$", re.M)
_TAG = re.compile(r"\[message (\d+)\]")


def context_items(context: str) -> list[tuple[str, str]]:
    """Cognee's context as (section, item) pairs: each passage, each entity, each related fact.

    With `only_context` Cognee returns the prompt it would have sent its own LLM: the question, its
    instruction, then `Context:` and the sections (`## Relevant passages` split by `---`, `##
    Relevant entities` by `###`, `## Related facts` one per line). Only the sections are kept: the
    answering prompt is the one every system shares."""
    body = context.split("Context:\n", 1)[1] if "Context:\n" in context else context
    body = body.strip().strip("`")
    marks = list(_SECTION.finditer(body))
    if not marks:
        return [("context", body)] if body.strip() else []
    items: list[tuple[str, str]] = []
    for k, mark in enumerate(marks):
        section = mark.group(1).strip()
        text = body[mark.end():marks[k + 1].start() if k + 1 < len(marks) else len(body)].strip()
        if "passage" in section.lower():
            parts = text.split("\n---\n")
        elif "entit" in section.lower():
            parts = ["### " + p for p in text.split("### ") if p.strip()]
        else:
            parts = [line[2:] if line.startswith("- ") else line for line in text.splitlines()]
        items += [(section, p.strip()) for p in parts if p.strip()]
    return items

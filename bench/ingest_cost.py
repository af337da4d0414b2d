"""Ingest cost: model calls and tokens per chunk for the lite set, one conversation and the full set.

Runs the real ingest (real Neo4j through the local provider, the real local embedder) against
a scripted *instant* model server whose replies are derived deterministically from each prompt:
capitalised names become Person/Place/Organization/Tool entities, numbers with units Measures,
"always/never/please/prefer/like" sentences standing rules with a Topic, other user sentences
mentioning an entity Facts; resolution answers "same" for near-identical names, updates answer
"replaces" when two statements differ in a number. Prompt and completion tokens are counted with
the offline tokenizer (messages plus the JSON schema sent), as a real server would report them.

    .venv/bin/python bench/ingest_cost.py [--data ../shared/beam] [--sets lite,conv17,full]
    .venv/bin/python bench/ingest_cost.py --sets scale     (100K:17, 500K:11 and the 1M chats here)
    .venv/bin/python bench/ingest_cost.py --smoke [--cache DIR]   (the lite set only)

A set is also TIER:N (one conversation of a tier, e.g. 500K:11) or TIER:here (every conversation of
the tier whose chat the copy holds); ``scale`` is 100K:17,500K:11,1M:here, and with more than one
tier the bench prints calls and tokens per chunk of each conversation as ratios against the 100K
conversation measured in the same run (issue 26: they stay flat as a conversation grows).

Targets (issue 5): calls per chunk on the full set <= 1.5x the lite set's; full set <= 1,500
calls and <= 6M tokens.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from smoke_options import add_smoke_options, smoke_defaults, use_cache  # noqa: E402

from pytest_beam.data.sets import load_set  # noqa: E402
from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels  # noqa: E402
from pytest_beam.memory.embeddings import make_embedder  # noqa: E402
from pytest_beam.memory.ingest import IngestConfig, ingest_documents  # noqa: E402
from pytest_beam.memory.tokens import count_tokens  # noqa: E402
from pytest_beam.services import open_driver, select_provider  # noqa: E402
from tests.model_server import Reply, ScriptedModelServer  # noqa: E402

ROLES = ("extraction", "resolution")
_TAG = re.compile(r"^\[message (\d+), (user|assistant)(?:, part \d+ of \d+)?\] ?", re.M)
_NAME = re.compile(r"\b([A-Z][a-zA-Z]+(?:[ -][A-Z][a-zA-Z]+){0,3})\b")
_MEASURE = re.compile(r"\b(\d+(?:[.,]\d+)?)\s?(%|km|kg|lbs?|hours?|minutes?|mins?|days?|weeks?|months?|years?|"
                      r"dollars|USD|\$|k|GB|MB|ms|seconds?|miles|pages|words|people|users|tasks)\b", re.I)
_RULE = re.compile(r"\b(always|never|please|make sure|from now on)\b", re.I)
_PREF = re.compile(r"\b(prefer|I like|I love|I hate|I'd rather|favorite|favourite)\b", re.I)
_STOP = {"I", "The", "This", "That", "It", "My", "We", "You", "Your", "If", "And", "But", "So", "Also", "Here",
         "What", "How", "Can", "Could", "Would", "Should", "Thanks", "Thank", "Yes", "No", "Hi", "Hello", "Let",
         "Great", "Sure", "Okay", "OK", "Step", "Note", "For", "In", "On", "At", "To", "With", "As", "Do", "Is",
         "Are", "Be", "Make", "Use", "Keep", "Start", "Consider", "Try", "Check", "Once", "When", "Then", "Finally",
         "First", "Second", "Third", "Next", "Remember", "Absolutely", "Good", "Best", "Example", "Summary",
         "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Week", "Day"}
_ORG = ("Inc", "Corp", "University", "College", "Company", "Team", "Bank", "Institute", "School", "Club", "Agency")
_TOOLS = {"Python", "Excel", "Trello", "Asana", "Slack", "Zoom", "Notion", "Git", "GitHub", "Docker", "Jira",
          "React", "Django", "Flask", "Figma", "Canva", "Google", "Sheets", "Docs", "Calendar", "AWS", "SQL",
          "Java", "JavaScript", "TypeScript", "Kubernetes", "Tableau", "PowerPoint", "Word", "Outlook", "Spotify"}
_PLACE_BEFORE = re.compile(r"\b(in|at|from|to|near|visit|visiting)\s+$")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip()) > 15]


def _entity_type(name: str, before: str) -> str:
    words = name.split()
    if words[0] in _TOOLS or any(w in _TOOLS for w in words):
        return "Tool"
    if words[-1] in _ORG:
        return "Organization"
    if _PLACE_BEFORE.search(before):
        return "Place"
    if len(words) in (2, 3) and all(w[0].isupper() and w[1:].islower() for w in words):
        return "Person"
    return "Topic"


_COMMON = set("""about after again being before between could doing during every having might other
should their there these thing things those through under until which while would really maybe think
thanks going something another little still since where whether without within across around because""".split())


def _keyword_topic(sentence: str) -> str | None:
    words = [w for w in re.findall(r"[a-z]{6,}", sentence.lower()) if w not in _COMMON]
    return max(words, key=lambda w: (len(w), w)) if words else None


def scripted_extraction(prompt: str) -> dict:
    body = prompt.split("<excerpt>", 1)[-1].split("</excerpt>", 1)[0]
    parts = [(int(m.group(1)), m.group(2), m.end()) for m in _TAG.finditer(body)]
    messages = []
    for n, (mid, role, start) in enumerate(parts):
        end = body.rfind("\n", 0, parts[n + 1][2]) if n + 1 < len(parts) else len(body)
        messages.append((mid, role, body[start:end]))
    entities: dict[str, dict] = {}
    statements: list[dict] = []

    def add_entity(name: str, kind: str, role: str) -> None:
        if len(entities) < (10 if kind != "Topic" else 16):
            entities.setdefault(name.lower(), {"type": kind, "name": name,
                                               "description": f"{kind.lower()} the {role} mentioned"})

    for _mid, role, text in sorted(messages, key=lambda m: m[1] != "user"):  # the user's names first
        for sentence in _sentences(text):
            for m in _NAME.finditer(sentence):
                name = m.group(1)
                at_start = m.start() == 0 or not sentence[:m.start()].strip()
                if name.split()[0] in _STOP or len(name) < 3 or (at_start and " " not in name):
                    continue
                add_entity(name, _entity_type(name, sentence[max(0, m.start() - 12):m.start()]), role)
    for mid, role, text in messages:
        budget = 8 if role == "user" else 4
        for sentence in _sentences(text):
            if budget == 0 or len(statements) >= 10:
                break
            about = [e["name"] for e in entities.values() if e["name"] in sentence][:3]
            measure = _MEASURE.search(sentence)
            if role == "assistant" and not (about or measure):
                continue
            if not about:
                topic = _keyword_topic(sentence)
                if topic is None:
                    continue
                add_entity(topic, "Topic", role)
                if topic.lower() not in entities:
                    continue
                about = [entities[topic.lower()]["name"]]
            budget -= 1
            if role == "user" and (_RULE.search(sentence) or _PREF.search(sentence)):
                kind = "Instruction" if _RULE.search(sentence) else "Preference"
                topic = (next((a for a in about if entities[a.lower()]["type"] == "Topic"), None)
                         or _keyword_topic(sentence))
                statements.append({"type": kind, "text": sentence[:300], "about": about, "topic": topic,
                                   "message_ids": [mid]})
            elif measure:
                statements.append({"type": "Measure", "text": sentence[:300], "about": about,
                                   "value": measure.group(1), "unit": measure.group(2), "message_ids": [mid]})
            else:
                statements.append({"type": "Fact", "text": sentence[:300], "about": about, "message_ids": [mid]})
    return {"entities": list(entities.values()), "statements": statements}


def scripted_resolution(prompt: str) -> dict:
    from rapidfuzz import fuzz

    decisions = []
    for block in re.split(r"\n(?=Pair \d+:)", prompt.split("\n\n", 1)[-1]):
        number = int(re.match(r"Pair (\d+)", block).group(1))
        names = re.findall(r'^  [AB]: "([^"]*)"', block, re.M)
        same = len(names) == 2 and fuzz.token_sort_ratio(names[0].lower(), names[1].lower()) >= 90
        decisions.append({"pair": number, "same": same})
    return {"decisions": decisions}


def scripted_updates(prompt: str) -> dict:
    decisions = []
    for block in re.split(r"\n(?=Pair \d+ )", prompt):
        number = int(re.match(r"Pair (\d+)", block).group(1))
        older = re.search(r"OLDER, session \d+: (.*)", block).group(1)
        newer = re.search(r"NEWER, session \d+: (.*)", block).group(1)
        a, b = set(re.findall(r"\d+", older)), set(re.findall(r"\d+", newer))
        relation = "replaces" if a and b and a != b else "unrelated"
        decisions.append({"pair": number, "relation": relation})
    return {"decisions": decisions}


@functools.lru_cache(maxsize=16)
def _schema_tokens(schema: str) -> int:
    return count_tokens(schema)  # the same few schemas on every call: count each once


def responder(body: dict) -> Reply | None:
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    user = "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user")
    if name == "Extraction":
        value = scripted_extraction(user)
    elif name == "ResolutionReply":
        value = scripted_resolution(user)
    elif name == "UpdateReply":
        value = scripted_updates(user)
    else:
        return None
    prompt_text = "\n".join(m.get("content") or "" for m in body.get("messages", []))
    schema = json.dumps((body.get("response_format") or {}).get("json_schema", {}))
    prompt_tokens = count_tokens(prompt_text) + _schema_tokens(schema) + 4 * len(body.get("messages", []))
    return Reply.json_object(value, usage={"prompt_tokens": prompt_tokens,
                                           "completion_tokens": count_tokens(json.dumps(value))})


class TimedEmbedder:
    def __init__(self, inner):
        self.inner, self.name, self.dimensions, self.seconds, self.texts = inner, inner.name, inner.dimensions, 0.0, 0

    def embed(self, texts):
        started = time.monotonic()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.monotonic() - started
            self.texts += len(texts)


def run_conversation(cid: str, documents, server_url: str, embedder, work: Path) -> dict:
    client = ModelClient(EndpointConfig(base_url=server_url, max_retries=0, concurrency=4),
                         RoleModels(agent="bench-agent", extraction="bench-extractor", resolution="bench-resolver"))
    service = select_provider("local", work_dir=work).create(f"bench-{cid}")
    conn = service.start()
    driver = open_driver(conn)
    try:
        embedder.seconds = 0.0
        started = time.monotonic()
        report = ingest_documents(driver, conn.database, list(documents), client, embedder, IngestConfig())
        wall = time.monotonic() - started
    finally:
        driver.close()
        service.stop()
        client.close()
    usage = client.meter.snapshot()
    return {"cid": cid, "chunks": report.chunks, "wall": wall, "embed_s": embedder.seconds,
            "model_s": sum(u.seconds for u in usage.values()),
            "roles": {r: usage[r] for r in ROLES if r in usage}, "report": report}


def summarise(label: str, runs: list[dict]) -> dict:
    chunks = sum(r["chunks"] for r in runs)
    calls = {role: sum(r["roles"][role].calls for r in runs if role in r["roles"]) for role in ROLES}
    tokens = {role: sum(r["roles"][role].tokens for r in runs if role in r["roles"]) for role in ROLES}
    total_calls, total_tokens = sum(calls.values()), sum(tokens.values())
    wall = sum(r["wall"] for r in runs)
    print(f"\n== {label}: {len(runs)} conversation(s), {chunks} chunks")
    for role in ROLES:
        print(f"   {role:<11} calls {calls[role]:>5} ({calls[role] / chunks:5.2f}/chunk)   tokens {tokens[role]:>9,} "
              f"({tokens[role] / chunks:8,.0f}/chunk)")
    print(f"   {'total':<11} calls {total_calls:>5} ({total_calls / chunks:5.2f}/chunk)   tokens {total_tokens:>9,} "
          f"({total_tokens / chunks:8,.0f}/chunk)")
    print(f"   wall {wall:6.1f} s with an instant model (model calls summed {sum(r['model_s'] for r in runs):5.1f} s, "
          f"embedding {sum(r['embed_s'] for r in runs):5.1f} s)")
    for r in runs:
        rep = r["report"]
        named = sum(v for k, v in rep.entities_by_type.items()
                    if k in ("Person", "Place", "Organization", "Tool", "Topic", "Event"))
        stated = sum(v for k, v in rep.entities_by_type.items()
                     if k in ("Fact", "Instruction", "Preference", "Measure"))
        print(f"   conv {r['cid']:>3}: {r['chunks']:>4} chunks, {r['wall']:6.1f} s, entities "
              f"{named}, statements {stated}, "
              f"SUPERSEDES {rep.relations_by_type.get('SUPERSEDES', 0)}, empty {rep.empty_extractions}")
        for note in rep.notes:
            if note.startswith(("resolution:", "updates:")):
                print(f"             {note}")
    return {"chunks": chunks, "calls": total_calls, "tokens": total_tokens, "per_chunk": total_calls / chunks}


SCALE = "100K:17,500K:11,1M:here"


def tier_sets(wanted: list[str], data: Path) -> list[tuple[str, str, str]]:
    """(label, tier, conversation) of every TIER:N or TIER:here set asked for, in order."""
    from pytest_beam.data.local_copy import chat_present
    from pytest_beam.data.tiers import tier as tier_of

    out = []
    for spec in wanted:
        if ":" not in spec:
            continue
        tier, which = spec.split(":", 1)
        ids = [c for c in tier_of(tier).conversations if chat_present(data, tier, c)] if which == "here" else [which]
        out += [(f"{tier}/conv{c}", tier, c) for c in ids]
    return out


def print_scale(rows: list[tuple[str, dict]]) -> None:
    """Per chunk, each conversation against the first (100K) one, all measured in this run."""
    base_label, base = rows[0]
    b_calls, b_tokens = base["calls"] / base["chunks"], base["tokens"] / base["chunks"]
    b_res = base["resolution_calls"] / base["chunks"]
    b_wall = base["wall"] / base["chunks"]
    print(f"\n== per chunk as the conversation grows: ratios against {base_label}, measured in this run")
    print(f"{'conversation':<14}{'messages':>9}{'chunks':>7}{'calls/chunk':>12}{'ratio':>7}{'tokens/chunk':>13}"
          f"{'ratio':>7}{'resol./chunk':>13}{'ratio':>7}{'s/chunk':>8}{'ratio':>7}")
    for label, r in rows:
        calls, tokens = r["calls"] / r["chunks"], r["tokens"] / r["chunks"]
        res, wall = r["resolution_calls"] / r["chunks"], r["wall"] / r["chunks"]
        print(f"{label:<14}{r['messages']:>9,}{r['chunks']:>7,}{calls:>12.2f}{calls / b_calls:>7.2f}{tokens:>13,.0f}"
              f"{tokens / b_tokens:>7.2f}{res:>13.2f}{(res / b_res if b_res else 0):>7.2f}{wall:>8.3f}"
              f"{wall / b_wall:>7.2f}")
    tiers: dict[str, list[dict]] = {}
    for label, r in rows[1:]:
        tiers.setdefault(label.split("/")[0], []).append(r)
    for tier, group in tiers.items():
        chunks = sum(r["chunks"] for r in group)
        calls = sum(r["calls"] for r in group) / chunks
        tokens = sum(r["tokens"] for r in group) / chunks
        print(f"{tier} ({len(group)} conversation(s), {chunks:,} chunks): calls/chunk {calls:.2f} = "
              f"{calls / b_calls:.2f}x {base_label}'s, tokens/chunk {tokens:,.0f} = {tokens / b_tokens:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("BEAM_DATA", str(ROOT.parent / "shared" / "beam")))
    parser.add_argument("--sets", default="lite,conv17,full")
    parser.add_argument("--work", default="/tmp/beam-ingest-bench")
    add_smoke_options(parser)
    args = parser.parse_args()
    smoke_defaults(parser, args, sets="lite")
    use_cache(args)
    data, work = Path(args.data), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    wanted = (SCALE if args.sets == "scale" else args.sets).split(",")
    embedder = TimedEmbedder(make_embedder("local"))
    results: dict[str, dict] = {}
    cache: dict[str, dict] = {}
    with ScriptedModelServer(responder=responder) as server:
        def run(cid, documents):
            if cid not in cache:
                print(f"... ingesting conversation {cid}", flush=True)
                cache[cid] = run_conversation(cid, documents, server.base_url, embedder, work)
            return cache[cid]

        if "lite" in wanted:
            lite = load_set("lite", data)
            results["lite"] = summarise("lite set", [run_conversation(c, d, server.base_url, embedder, work)
                                                     for c, d in lite.documents.items()])
        full = load_set("full", data) if ("full" in wanted or "conv17" in wanted) else None
        if "conv17" in wanted:
            results["conv17"] = summarise("one conversation (17, 5 sessions)", [run("17", full.documents["17"])])
        if "full" in wanted:
            results["full"] = summarise("full set (1, 4, 6, 13, 17)",
                                        [run(c, d) for c, d in full.documents.items()])
        scale: list[tuple[str, dict]] = []
        for label, tier, cid in tier_sets(wanted, data):
            documents = load_set("full", data, cid, tier=tier).documents[cid]
            print(f"... ingesting {label}", flush=True)
            ran = run_conversation(label.replace("/", "-"), documents, server.base_url, embedder, work)
            row = summarise(label, [ran])
            row.update(wall=ran["wall"], messages=sum(len(d.messages) for d in documents),
                       resolution_calls=ran["roles"]["resolution"].calls if "resolution" in ran["roles"] else 0)
            scale.append((label, row))
    if len({label.split("/")[0] for label, _ in scale}) > 1:
        print_scale(scale)
    if "lite" in results and "full" in results:
        ratio = results["full"]["per_chunk"] / results["lite"]["per_chunk"]
        f = results["full"]
        ok = ratio <= 1.5 and f["calls"] <= 1500 and f["tokens"] <= 6_000_000
        print(f"\ncalls/chunk full / lite = {ratio:.2f} (target <= 1.5); full set {f['calls']} calls "
              f"(target <= 1,500), {f['tokens']:,} tokens (target <= 6,000,000): {'OK' if ok else 'MISSED'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Cognee's child process: Cognee in its own environment, its data in the conversation's folder.

Requests (protocol.py): `start` (Cognee configured by environment and its data and system roots
set to folders the parent chose), `add` (one session's text added to the dataset, then `cognify`
on it: chunks, graph extraction, summaries), `search` (Cognee's default search type with
`only_context`, so Cognee retrieves and the parent's answering model answers), `close`.
"""

from __future__ import annotations

import os
from typing import Any

from .protocol import Message, serve

DATASET = "beam"
state: Message = {}


def _no_retry_time_floor() -> None:
    """Cognee retries a failed model call until both 2 attempts and 240 s have passed. The harness
    bounds each call itself (its timeout and retries), and what the relay refuses (the spend cap, a
    cassette miss) must stop the run at once, not after four minutes: the attempts stay, the time
    floor goes. Set before Cognee's model adapters are imported, which read it when they load."""
    import tenacity
    from cognee.infrastructure.llm import retry_config

    retry_config.llm_retry_stop_condition = tenacity.stop_after_attempt(retry_config.LLM_MIN_RETRY_ATTEMPTS)


# the modules of Cognee's model adapters whose calls are retried with waits (its default framework
# first); the ones a configuration can select for the harness's OpenAI-compatible relay
ADAPTER_MODULES = (
    "cognee.infrastructure.llm.structured_output_framework.litellm_native.native_adapter",
    "cognee.infrastructure.llm.structured_output_framework.litellm_instructor.llm.openai.adapter",
    "cognee.infrastructure.llm.structured_output_framework.litellm_instructor.llm.generic_llm_api.adapter",
)


def _no_waits_between_tries() -> list[str]:
    """Cognee waits 2 to 128 s (exponential, jittered) before each new try of a model call: meant for
    a provider's rate limit, which the harness's transport has already waited out before Cognee sees a
    failure (429s as the endpoint asks, 5xx with --beam-max-retries). What is left for Cognee to try
    again is a reply it could not use, and no wait changes the next one: the tries stay, the waits go.
    Returns the methods changed ("Class.method"), so a Cognee that moved them is noticed."""
    import importlib
    import inspect

    import tenacity

    changed = []
    for name in ADAPTER_MODULES:
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != name:
                continue
            for attr, method in vars(cls).items():
                policy = getattr(method, "retry", None)
                if isinstance(policy, tenacity.BaseRetrying):
                    policy.wait = tenacity.wait_none()
                    changed.append(f"{cls.__name__}.{attr}")
    return changed


async def start(request: Message) -> Message:
    config = request["config"]
    for key, value in config["env"].items():
        os.environ[key] = str(value)
    _no_retry_time_floor()
    import cognee

    cognee.config.data_root_directory(config["data_root"])
    cognee.config.system_root_directory(config["system_root"])
    state["cognee"] = cognee
    from importlib.metadata import version

    return {"version": version("cognee"), "without_waits": _no_waits_between_tries()}


UNUSABLE = ("ValidationError", "InstructorRetryException", "JSONDecodeError")


async def add(request: Message) -> Message:
    """Add one session and cognify it. A cognify that Cognee gave up on because of what the model wrote
    (its schema retries ran out) is reported as lost, not raised: the session's graph and summaries
    are missing, and the run goes on, as the built-in system goes on past a chunk it could not read."""
    cognee = state["cognee"]
    added = await cognee.add(request["text"], dataset_name=DATASET)
    try:
        await cognee.cognify(datasets=[DATASET])
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        if not any(kind in text for kind in UNUSABLE):
            raise
        # the session leaves the dataset, or the next cognify would read it again and fail again
        dataset = getattr(added, "dataset_id", None)
        for item in getattr(added, "data_ingestion_info", None) or []:
            if isinstance(item, dict) and item.get("data_id") and dataset is not None:
                await cognee.datasets.delete_data(dataset_id=dataset, data_id=item["data_id"])
        return {"lost": (text.strip().splitlines() or [""])[0][:300]}
    return {}


def _plain(value: Any) -> Any:
    """What Cognee returns, as JSON (its models and UUIDs as their fields and strings)."""
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


async def search(request: Message) -> Message:
    cognee = state["cognee"]
    from cognee import SearchType

    kind = SearchType[request["search_type"]]
    try:
        found = await cognee.search(query_text=request["query"], query_type=kind, datasets=[DATASET],
                                    top_k=request["top_k"], only_context=True)
    except Exception as exc:
        if type(exc).__name__ != "NoDataError":
            raise
        return {"results": [], "empty": str(exc)[:300]}  # nothing was cognified: Cognee remembers nothing
    return {"results": _plain(found)}


async def close(request: Message) -> Message:
    state.clear()
    return {}


if __name__ == "__main__":
    raise SystemExit(serve({"start": start, "add": add, "search": search, "close": close}))

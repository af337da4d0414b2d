"""The model client: one way to call any OpenAI-compatible endpoint, one model per role.

Order of sources for every call: cassette (replay) -> response cache -> network. A network call is checked
against the budget first and sent by the :class:`~.transport.Transport` (concurrency limit, retries, fallbacks);
its raw response body is then stored in the cassette (when recording) and, when the caller can use the reply,
in the cache. Live, cached and replayed responses are parsed from the same raw bytes by the same code
(:mod:`.replies`), so a replay is indistinguishable from the live call.

A client that only replays a cassette never imports ``openai`` and needs no base URL.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..redaction import redact, redact_value
from .budget import Budget
from .cache import ResponseCache, cache_key, canonical_json, fingerprint
from .cassette import Cassette
from .config import EMBEDDING_ROLE, ROLES, EndpointConfig, Role, RoleModels
from .errors import CassetteMiss, ModelEndpointError, StructuredOutputError
from .meter import Meter, Usage
from .replies import CallEvent, ChatResult, StructuredResult, ToolCall, parse_chat
from .structured import StructuredParseError, json_schema_format, parse_structured
from .transport import STRUCTURED_MODES, Transport, parse_retry_after
from .wire import JsonObject, NamedToolChoice, ResponseFormat, ToolSpec, WireMessage, tool_name

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

__all__ = ["ModelClient", "ChatResult", "StructuredResult", "ToolCall", "STRUCTURED_MODES", "parse_retry_after"]


@dataclass
class _Obtained:
    body: bytes
    data: JsonObject
    source: str  # "network", "cache" or "cassette"
    attempts: int = 0
    mode: str | None = None


class ModelClient:
    """A client of one endpoint with a model per role. Safe to share between threads.

    ``trace`` is called once per call (chat or embed, success or failure) with a JSON-able dict:
    ``kind, role, model, messages (count), tools (names), response_format (type), text,
    tool_calls, finish_reason, usage, latency_s, cached, replayed, attempts, fingerprint, error``.
    It never contains the API key.
    """

    def __init__(
        self,
        endpoint: EndpointConfig,
        models: RoleModels,
        *,
        meter: Meter | None = None,
        cache: ResponseCache | None = None,
        cassette: Cassette | None = None,
        budget: Budget | None = None,
        trace: Callable[[CallEvent], None] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.models = models
        self.meter = meter if meter is not None else Meter()
        self.cache = cache
        self.cassette = cassette
        self.budget = budget
        self.trace = trace
        self._transport = Transport(endpoint)
        self._secrets = self._transport.secrets
        self._format_refused = False  # the endpoint answered a chat response_format with 400/422

    def sibling(self, meter: Meter) -> ModelClient:
        """The same client (endpoint, transport, cache, cassette, budget, trace) metering into
        ``meter``: calls that must be counted apart (the judge check) share everything else."""
        twin = copy.copy(self)
        twin.meter = meter
        return twin

    # -- public API ------------------------------------------------------------------------------

    @property
    def structured_mode(self) -> str:
        """The structured-output mode this client has found to work (starts at json_schema)."""
        return self._transport.structured_mode

    @property
    def sends_seed(self) -> bool:
        return self._transport.sends_seed

    def chat(
        self,
        *,
        role: Role,
        messages: list[WireMessage],
        tools: list[ToolSpec] | None = None,
        tool_choice: str | NamedToolChoice | None = None,
        max_tokens: int | None = None,
        response_format: ResponseFormat | None = None,
        repeat: int = 0,
        accept: Callable[[str | None], bool] | None = None,
    ) -> ChatResult:
        """One chat call. ``accept(text)`` says whether the caller can use the reply (a judge's verdict parses): one
        it cannot use is returned all the same but never kept in the response cache, so the next run asks again
        instead of replaying the failure (a cassette still records it: a replay must reproduce the run). ``repeat``
        > 0 asks the same request again as its own call (judge repeats): the number is folded into the cache key and
        cassette fingerprint, never sent to the endpoint; ``repeat=0`` keys exactly as a call without it.

        A ``response_format`` is a wish, not a need (the judge parses text anyway): an endpoint that
        answers it with 400/422 is asked again plain, and every later call of this client goes plain
        (remembered per client, so per endpoint and session); a replayed cassette recorded plain
        replays plain. The result's ``response_format`` says what the reply was asked with. The
        plain request is its own fingerprint and cache key, so cache and cassette stay exact.
        """
        def send(fmt: ResponseFormat | None) -> ChatResult:
            return self._chat(role, messages, response_format=fmt, tools=tools, tool_choice=tool_choice,
                              max_tokens=max_tokens, structured_schema=None, repeat=repeat, accept=accept)

        if response_format is None or self._format_refused:
            return send(None)
        try:
            return send(response_format)
        except CassetteMiss:
            if self.cassette is None or self.cassette.allows_network:
                raise
            return send(None)  # recorded plain
        except ModelEndpointError as exc:
            if exc.status not in (400, 422):
                raise
            result = send(None)
            self._format_refused = True  # the plain call worked: the format was what it refused
            return result

    def structured(
        self,
        *,
        role: Role,
        messages: list[WireMessage],
        schema: type[BaseModel],
        max_tokens: int | None = None,
    ) -> StructuredResult:
        """Ask for a JSON object valid for ``schema``; one retry showing the error, then raise."""
        fmt = json_schema_format(schema)
        json_schema = fmt["json_schema"]["schema"]
        msgs = list(messages)
        total = Usage()
        flags: list[tuple[bool, bool]] = []
        error = ""
        text: str | None = None
        model = self.models.for_role(role)
        for attempt in (1, 2):
            result = self._chat(role, msgs, tools=None, tool_choice=None, max_tokens=max_tokens,
                                response_format=fmt, structured_schema=json_schema,
                                accept=lambda reply: _valid(reply, schema))
            total = total + result.usage
            flags.append((result.cached, result.replayed))
            text = result.text
            try:
                value = parse_structured(text, schema)
            except StructuredParseError as exc:
                error = str(exc)
            else:
                return StructuredResult(
                    value=value, attempts=attempt, usage=total, raw_text=text, mode=self._transport.structured_mode,
                    cached=all(c for c, _ in flags), replayed=all(r for _, r in flags),
                )
            if attempt == 1:
                msgs = [
                    *msgs, {"role": "assistant", "content": text or ""},
                    {"role": "user", "content": (
                        "Your reply was not valid for the required JSON schema. The error was:\n"
                        f"{error}\n"
                        "Reply again with only a JSON object that is valid for the schema."
                    )},
                ]
        raise StructuredOutputError(
            redact(f"{role} reply from model {model} is not valid for schema {fmt['json_schema']['name']} "
                   f"after 2 attempts: {error}", self._secrets),
            role=role, model=model, schema_name=fmt["json_schema"]["name"],
            validation_error=redact(error, self._secrets), raw_text=text, attempts=2, usage=total,
        )

    def embed(self, texts: list[str], *, model: str) -> list[list[float]]:
        """Embeddings from ``/v1/embeddings``, metered under role ``"embedding"`` (no budget check)."""
        logical = {"model": model, "input": list(texts), "encoding_format": "float"}
        started = time.monotonic()
        trace: CallEvent = {"kind": "embeddings", "role": EMBEDDING_ROLE, "model": model, "inputs": len(texts)}
        call = self.meter.new_call()
        try:
            got = self._obtain("embeddings", EMBEDDING_ROLE, model, logical, structured_schema=None, call=call)
        except ModelEndpointError as exc:
            self.meter.record(EMBEDDING_ROLE, _failed(exc, time.monotonic() - started), call=call)
            self._emit(trace | {"error": str(exc), "latency_s": time.monotonic() - started})
            raise
        latency = time.monotonic() - started
        data = got.data
        items = sorted(data.get("data") or [], key=lambda d: d.get("index", 0))
        vectors = [list(map(float, item["embedding"])) for item in items]
        usage = self._usage_of(data, got, latency, completion=False)
        self.meter.record(EMBEDDING_ROLE, usage, call=call)
        self._emit(trace | {"usage": usage.model_dump(), "latency_s": latency, "cached": got.source == "cache",
                            "replayed": got.source == "cassette", "attempts": got.attempts,
                            "dimensions": len(vectors[0]) if vectors else 0})
        return vectors

    def halt(self, reason: str) -> None:  # its siblings and the relay's clients share the transport
        self._transport.halt(reason)  # no request goes out any more

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ModelClient(endpoint={self.endpoint!r}, models={self.models!r})"

    # -- chat machinery ----------------------------------------------------------------------------

    def _chat(
        self,
        role: str,
        messages: list[WireMessage],
        *,
        tools: list[ToolSpec] | None,
        tool_choice: str | NamedToolChoice | None,
        max_tokens: int | None,
        response_format: ResponseFormat | None,
        structured_schema: JsonObject | None,
        repeat: int = 0,
        accept: Callable[[str | None], bool] | None = None,
    ) -> ChatResult:
        if repeat < 0:
            raise ValueError(f"repeat {repeat} must be at least 0")
        salt: JsonObject = {"repeat": repeat} if repeat else {}
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        model = self.models.for_role(role)
        logical: JsonObject = {
            "model": model,
            "messages": list(messages),
            "temperature": self.endpoint.temperature,
        }
        if self.endpoint.seed is not None:
            logical["seed"] = self.endpoint.seed
        if tools:
            logical["tools"] = list(tools)
        if tool_choice is not None:
            logical["tool_choice"] = tool_choice
        if response_format is not None:
            logical["response_format"] = response_format
        if max_tokens is not None:
            logical["max_tokens"] = max_tokens

        started = time.monotonic()
        trace: CallEvent = {
            "kind": "chat",
            "role": role,
            "model": model,
            "messages": len(messages),
            "tools": [tool_name(t) for t in tools or []],
            "response_format": response_format.get("type") if response_format else None,
            "fingerprint": fingerprint({"kind": "chat", **logical, **salt}),
        }
        call = self.meter.new_call()
        try:
            got = self._obtain("chat", role, model, logical, structured_schema=structured_schema,
                               fp=trace["fingerprint"], salt=salt, usable=_usable_text(accept), call=call)
            text, tool_calls, finish_reason = parse_chat(got.data)
        except ModelEndpointError as exc:
            self.meter.record(role, _failed(exc, time.monotonic() - started), call=call)
            self._emit(trace | {"error": str(exc), "latency_s": time.monotonic() - started})
            raise
        latency = time.monotonic() - started
        usage = self._usage_of(got.data, got, latency, completion=True)
        self.meter.record(role, usage, call=call)
        result = ChatResult(
            text=text, tool_calls=tool_calls, finish_reason=finish_reason, usage=usage, latency_s=latency,
            model=str(got.data.get("model") or model), cached=got.source == "cache",
            replayed=got.source == "cassette", raw=got.body,
            response_format=(got.mode or response_format.get("type")) if response_format else None,
        )
        self._emit(trace | {
            "text": text,
            "tool_calls": [c.to_dict() for c in tool_calls],
            "finish_reason": finish_reason,
            "usage": usage.model_dump(),
            "latency_s": latency,
            "cached": result.cached,
            "replayed": result.replayed,
            "attempts": got.attempts,
            "structured_mode": got.mode,
        })
        return result

    @staticmethod
    def _usage_of(data: JsonObject, got: _Obtained, latency: float, *, completion: bool) -> Usage:
        raw = data.get("usage")
        missing = not isinstance(raw, dict)
        prompt = int((raw or {}).get("prompt_tokens") or 0) if not missing else 0
        compl = int((raw or {}).get("completion_tokens") or 0) if (not missing and completion) else 0
        if got.source == "network":
            return Usage(calls=1, prompt_tokens=prompt, completion_tokens=compl, seconds=latency,
                         usage_missing=int(missing), retries=max(got.attempts - 1, 0))
        if got.source == "cache":
            return Usage(cached_calls=1, cached_tokens=prompt + compl, seconds=latency)
        return Usage(replayed_calls=1, cached_tokens=prompt + compl, seconds=latency)

    # -- sources: cassette, cache, network ------------------------------------------------------------

    def _obtain(self, kind: str, role: str, model: str, logical: JsonObject, *,
                structured_schema: JsonObject | None, fp: str | None = None, salt: JsonObject | None = None,
                usable: Callable[[JsonObject], bool] | None = None, call: int = 0) -> _Obtained:
        """The response to a request, from the cassette, the cache or the network. ``usable(data)``
        says whether the caller can use a response: only usable ones are kept in the cache, and a
        cached one that is not (kept by an older version) is asked again as a miss."""
        request = {"kind": kind, **logical, **(salt or {})}  # the salt keys the call; only `logical` is sent
        fp = fp or fingerprint(request)
        occurrence = 0
        cassette = self.cassette
        if cassette is not None:
            occurrence, body = cassette.lookup(fp)
            if body is not None:
                return _Obtained(body, self._transport.decode(body, kind, role, model), "cassette")
            if not cassette.allows_network:
                raise cassette.miss(fp=fp, role=role, model=model)
        key = None
        if self.cache is not None:
            key = cache_key(self.endpoint.cache_identity, request)
            body = self.cache.get(key)
            if body is not None:
                try:
                    data = self._transport.decode(body, kind, role, model)
                except ModelEndpointError as exc:  # a damaged entry: a miss, not an endpoint failure
                    self.cache.discard(key, exc.reason or "not a response body")
                else:
                    if usable is None or usable(data):
                        if cassette is not None:
                            cassette.record(fp, occurrence, body, role=role, model=model, kind=kind)
                        return _Obtained(body, data, "cache")
                    self.cache.forget(key)  # a reply the caller cannot use: asked again
        if self.budget is not None and kind == "chat":
            estimate = len(canonical_json(logical.get("messages", []))) + len(canonical_json(logical.get("tools", [])))
            self.budget.reserve(role, estimated_tokens=estimate // 4)
        sent = self._transport.send(kind, role, model, logical, structured_schema,
                                    on_request=lambda attempt: self.meter.sent(role, call, attempt))
        got = _Obtained(sent.body, sent.data, "network", attempts=sent.attempts, mode=sent.mode)
        if self.budget is not None and kind == "chat":
            usage = got.data.get("usage")
            u = usage if isinstance(usage, dict) else {}
            self.budget.record(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
        if self.cache is not None and key is not None and (usable is None or usable(got.data)):
            self.cache.put(key, got.body)
        if cassette is not None:
            cassette.record(fp, occurrence, got.body, role=role, model=model, kind=kind)
        return got

    def _emit(self, record: CallEvent) -> None:
        if self.trace is None:
            return
        self.trace(redact_value(record, self._secrets))


def _failed(exc: ModelEndpointError, latency: float) -> Usage:
    """A call that failed for good: one call when any request went out, its other requests as
    retries, and the error (so the meter equals what the endpoint was sent)."""
    attempts = max(int(exc.attempts or 0), 0)
    return Usage(calls=1 if attempts else 0, retries=max(attempts - 1, 0), errors=1, seconds=latency)


def _valid(text: str | None, schema: type[BaseModel]) -> bool:
    """Whether a structured reply validates (the same parse the caller does)."""
    try:
        parse_structured(text, schema)
    except StructuredParseError:
        return False
    return True


def _usable_text(accept: Callable[[str | None], bool] | None) -> Callable[[JsonObject], bool] | None:
    """``accept`` of a reply's text, as a test of a decoded chat response."""
    if accept is None:
        return None

    def usable(data: JsonObject) -> bool:
        try:
            text, _, _ = parse_chat(data)
        except (KeyError, IndexError, TypeError, AttributeError):
            return False
        return bool(accept(text))

    return usable

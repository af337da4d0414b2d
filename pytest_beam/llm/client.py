"""The model client: one way to call any OpenAI-compatible endpoint.

Order of sources for every call: cassette (replay) -> response cache -> network. A network call
is checked against the budget first, goes through the per-endpoint concurrency limit, is retried
on timeouts, connection errors, 429 and 5xx, and its raw response body is then stored in the
cache and the cassette (when recording). Live, cached and replayed responses are parsed from the
same raw bytes by the same code, so a replay is indistinguishable from the live call.

The ``openai`` package is imported lazily, when the first network call needs it; a client that
only replays a cassette never imports it and needs no base URL.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..redaction import redact, redact_value
from .budget import Budget
from .cache import ResponseCache, cache_key, canonical_json, fingerprint
from .cassette import Cassette
from .config import EMBEDDING_ROLE, ROLES, EndpointConfig, Role, RoleModels
from .errors import ModelEndpointError, StructuredOutputError
from .meter import Meter, Usage
from .structured import StructuredParseError, json_schema_format, parse_structured, with_schema_instruction

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

STRUCTURED_MODES = ("json_schema", "json_object", "text")
_MAX_REASON_CHARS = 500

# -- per-endpoint concurrency ------------------------------------------------------------------

_SEMAPHORES: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


def endpoint_semaphore(base_url: str, concurrency: int) -> threading.BoundedSemaphore:
    """The process-wide semaphore of an endpoint at a concurrency limit.

    Clients of one endpoint with the same limit share it, so the limit holds across them; a client
    configured with another limit gets that limit (keying by URL alone let the first client's
    size silently override every later one's)."""
    key = (base_url.rstrip("/"), int(concurrency))
    with _SEMAPHORES_LOCK:
        sem = _SEMAPHORES.get(key)
        if sem is None:
            sem = _SEMAPHORES[key] = threading.BoundedSemaphore(concurrency)
        return sem


# -- results --------------------------------------------------------------------------------------


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    arguments_error: str | None = None  # set when raw_arguments is not a JSON object

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "raw_arguments": self.raw_arguments}


@dataclass
class ChatResult:
    text: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage
    latency_s: float
    model: str
    cached: bool
    replayed: bool = False
    raw: bytes = field(default=b"", repr=False)  # the response body exactly as received

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation (tool calls included)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in self.tool_calls
            ]
        return msg


@dataclass
class StructuredResult:
    value: Any  # an instance of the schema
    attempts: int
    usage: Usage  # summed over the attempts
    raw_text: str | None
    mode: str  # "json_schema", "json_object" or "text": how the endpoint was asked
    cached: bool = False
    replayed: bool = False


@dataclass
class _Obtained:
    body: bytes
    data: dict[str, Any]
    source: str  # "network", "cache" or "cassette"
    attempts: int = 0
    mode: str | None = None


class _Retryable(Exception):
    def __init__(self, status: int | None, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after


def parse_retry_after(headers: Any, cap_s: float) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date), capped."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return min(max(float(value) / 1000.0, 0.0), cap_s)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), cap_s)


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
        trace: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.models = models
        self.meter = meter if meter is not None else Meter()
        self.cache = cache
        self.cassette = cassette
        self.budget = budget
        self.trace = trace
        self._secrets: tuple[str, ...] = (endpoint.api_key,) if endpoint.api_key else ()
        self._lock = threading.Lock()
        self._openai: Any = None
        self._send_seed = endpoint.seed is not None
        self._structured_mode = STRUCTURED_MODES[0]
        self._rng = random.Random()

    # -- public API ------------------------------------------------------------------------------

    @property
    def structured_mode(self) -> str:
        """The structured-output mode this client has found to work (starts at json_schema)."""
        return self._structured_mode

    @property
    def sends_seed(self) -> bool:
        return self._send_seed

    def chat(
        self,
        *,
        role: Role,
        messages: list[dict],
        tools: list[dict] | None = None,
        tool_choice: str | dict | None = None,
        max_tokens: int | None = None,
        response_format: dict | None = None,
    ) -> ChatResult:
        return self._chat(role, messages, tools=tools, tool_choice=tool_choice, max_tokens=max_tokens,
                          response_format=response_format, structured_schema=None)

    def structured(
        self,
        *,
        role: Role,
        messages: list[dict],
        schema: "type[BaseModel]",
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
                                response_format=fmt, structured_schema=json_schema)
            total = total + result.usage
            flags.append((result.cached, result.replayed))
            text = result.text
            try:
                value = parse_structured(text, schema)
            except StructuredParseError as exc:
                error = str(exc)
            else:
                return StructuredResult(
                    value=value, attempts=attempt, usage=total, raw_text=text, mode=self._structured_mode,
                    cached=all(c for c, _ in flags), replayed=all(r for _, r in flags),
                )
            if attempt == 1:
                msgs = msgs + [
                    {"role": "assistant", "content": text or ""},
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
        trace: dict[str, Any] = {"kind": "embeddings", "role": EMBEDDING_ROLE, "model": model, "inputs": len(texts)}
        try:
            got = self._obtain("embeddings", EMBEDDING_ROLE, model, logical, structured_schema=None)
        except ModelEndpointError as exc:
            self.meter.record(EMBEDDING_ROLE, Usage(errors=1, latency_s=time.monotonic() - started))
            self._emit(trace | {"error": str(exc), "latency_s": time.monotonic() - started})
            raise
        latency = time.monotonic() - started
        data = got.data
        items = sorted(data.get("data") or [], key=lambda d: d.get("index", 0))
        vectors = [list(map(float, item["embedding"])) for item in items]
        usage = self._usage_of(data, got, latency, completion=False)
        self.meter.record(EMBEDDING_ROLE, usage)
        self._emit(trace | {"usage": usage.to_dict(), "latency_s": latency, "cached": got.source == "cache",
                            "replayed": got.source == "cassette", "attempts": got.attempts, "dimensions": len(vectors[0]) if vectors else 0})
        return vectors

    def close(self) -> None:
        with self._lock:
            if self._openai is not None:
                self._openai.close()
                self._openai = None

    def __enter__(self) -> "ModelClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ModelClient(endpoint={self.endpoint!r}, models={self.models!r})"

    # -- chat machinery ----------------------------------------------------------------------------

    def _chat(
        self,
        role: str,
        messages: list[dict],
        *,
        tools: list[dict] | None,
        tool_choice: str | dict | None,
        max_tokens: int | None,
        response_format: dict | None,
        structured_schema: dict | None,
    ) -> ChatResult:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        model = self.models.for_role(role)
        logical: dict[str, Any] = {
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
        trace: dict[str, Any] = {
            "kind": "chat",
            "role": role,
            "model": model,
            "messages": len(messages),
            "tools": [t.get("function", {}).get("name", t.get("name")) for t in tools or []],
            "response_format": (response_format or {}).get("type"),
            "fingerprint": fingerprint({"kind": "chat", **logical}),
        }
        try:
            got = self._obtain("chat", role, model, logical, structured_schema=structured_schema,
                               fp=trace["fingerprint"])
            text, tool_calls, finish_reason = self._parse_chat(got.data)
        except ModelEndpointError as exc:
            self.meter.record(role, Usage(errors=1, latency_s=time.monotonic() - started))
            self._emit(trace | {"error": str(exc), "latency_s": time.monotonic() - started})
            raise
        latency = time.monotonic() - started
        usage = self._usage_of(got.data, got, latency, completion=True)
        self.meter.record(role, usage)
        result = ChatResult(
            text=text, tool_calls=tool_calls, finish_reason=finish_reason, usage=usage, latency_s=latency,
            model=str(got.data.get("model") or model), cached=got.source == "cache",
            replayed=got.source == "cassette", raw=got.body,
        )
        self._emit(trace | {
            "text": text,
            "tool_calls": [c.to_dict() for c in tool_calls],
            "finish_reason": finish_reason,
            "usage": usage.to_dict(),
            "latency_s": latency,
            "cached": result.cached,
            "replayed": result.replayed,
            "attempts": got.attempts,
            "structured_mode": got.mode,
        })
        return result

    @staticmethod
    def _usage_of(data: dict[str, Any], got: _Obtained, latency: float, *, completion: bool) -> Usage:
        raw = data.get("usage")
        missing = not isinstance(raw, dict)
        prompt = int((raw or {}).get("prompt_tokens") or 0) if not missing else 0
        compl = int((raw or {}).get("completion_tokens") or 0) if (not missing and completion) else 0
        if got.source == "network":
            return Usage(calls=1, prompt_tokens=prompt, completion_tokens=compl, latency_s=latency,
                         usage_missing=int(missing), retries=max(got.attempts - 1, 0))
        if got.source == "cache":
            return Usage(cached_calls=1, cached_tokens=prompt + compl, latency_s=latency)
        return Usage(replayed_calls=1, cached_tokens=prompt + compl, latency_s=latency)

    def _parse_chat(self, data: dict[str, Any]) -> tuple[str | None, list[ToolCall], str | None]:
        choice = data["choices"][0]  # shape checked by _decode
        message = choice.get("message") or {}
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        calls: list[ToolCall] = []
        for i, raw_call in enumerate(message.get("tool_calls") or []):
            fn = raw_call.get("function") or {}
            raw_args = fn.get("arguments")
            if isinstance(raw_args, dict):
                args, raw_text, err = raw_args, json.dumps(raw_args), None
            else:
                raw_text = raw_args or ""
                try:
                    parsed = json.loads(raw_text) if raw_text.strip() else {}
                    args, err = (parsed, None) if isinstance(parsed, dict) else ({}, "arguments are not a JSON object")
                except ValueError as exc:
                    args, err = {}, f"arguments are not valid JSON: {exc}"
            calls.append(ToolCall(id=str(raw_call.get("id") or f"call_{i}"), name=str(fn.get("name") or ""),
                                  arguments=args, raw_arguments=raw_text, arguments_error=err))
        return content, calls, choice.get("finish_reason")

    # -- sources: cassette, cache, network ------------------------------------------------------------

    def _obtain(self, kind: str, role: str, model: str, logical: dict[str, Any], *,
                structured_schema: dict | None, fp: str | None = None) -> _Obtained:
        request = {"kind": kind, **logical}
        fp = fp or fingerprint(request)
        occurrence = 0
        cassette = self.cassette
        if cassette is not None:
            occurrence, body = cassette.lookup(fp)
            if body is not None:
                return _Obtained(body, self._decode(body, kind, role, model), "cassette")
            if not cassette.allows_network:
                raise cassette.miss(fp=fp, role=role, model=model)
        key = None
        if self.cache is not None:
            key = cache_key(self.endpoint.endpoint_key, request)
            body = self.cache.get(key)
            if body is not None:
                data = self._decode(body, kind, role, model)
                if cassette is not None:
                    cassette.record(fp, occurrence, body, role=role, model=model, kind=kind)
                return _Obtained(body, data, "cache")
        if self.budget is not None and kind == "chat":
            estimate = len(canonical_json(logical.get("messages", []))) + len(canonical_json(logical.get("tools", [])))
            self.budget.reserve(role, estimated_tokens=estimate // 4)
        got = self._send(kind, role, model, logical, structured_schema)
        if self.budget is not None and kind == "chat":
            u = got.data.get("usage") if isinstance(got.data.get("usage"), dict) else {}
            self.budget.record(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
        if self.cache is not None and key is not None:
            self.cache.put(key, got.body)
        if cassette is not None:
            cassette.record(fp, occurrence, got.body, role=role, model=model, kind=kind)
        return got

    def _decode(self, body: bytes, kind: str, role: str, model: str) -> dict[str, Any]:
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise self._endpoint_error(kind, role, model, None, "response body is not a JSON object", attempts=0)
        choices = data.get("choices")
        if kind == "chat" and not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            raise self._endpoint_error(kind, role, model, None, f"response has no choices: {body[:200]!r}", attempts=0)
        if kind == "embeddings" and not isinstance(data.get("data"), list):
            raise self._endpoint_error(kind, role, model, None, f"response has no data: {body[:200]!r}", attempts=0)
        return data

    def _client(self) -> Any:
        with self._lock:
            if self._openai is None:
                import openai

                self._openai = openai.OpenAI(
                    api_key=self.endpoint.api_key or "no-key",
                    base_url=self.endpoint.base_url,
                    timeout=self.endpoint.timeout_s,
                    max_retries=0,  # retries are ours, so they are counted and logged
                )
            return self._openai

    def _request_kwargs(self, kind: str, logical: dict[str, Any], structured_schema: dict | None, mode: str) -> dict[str, Any]:
        kwargs = dict(logical)
        if kind != "chat":
            return kwargs
        if not self._send_seed:
            kwargs.pop("seed", None)
        if structured_schema is not None and mode != "json_schema":
            kwargs["messages"] = with_schema_instruction(kwargs["messages"], structured_schema)
            if mode == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            else:
                kwargs.pop("response_format", None)
        return kwargs

    def _send(self, kind: str, role: str, model: str, logical: dict[str, Any], structured_schema: dict | None) -> _Obtained:
        if not self.endpoint.base_url:
            raise ModelEndpointError(
                f"No model endpoint base URL configured; cannot make the {role} call (model {model}) "
                "that is not in the cassette or cache.",
                base_url=None, model=model, role=role, attempts=0,
            )
        import openai

        client = self._client()
        sem = endpoint_semaphore(self.endpoint.endpoint_key, self.endpoint.concurrency)
        mode = self._structured_mode if structured_schema is not None else None
        attempts = 0
        retries = 0
        while True:
            kwargs = self._request_kwargs(kind, logical, structured_schema, mode or "json_schema")
            attempts += 1
            try:
                try:
                    with sem:
                        if kind == "chat":
                            response = client.chat.completions.with_raw_response.create(**kwargs)
                        else:
                            response = client.embeddings.with_raw_response.create(**kwargs)
                        body = response.http_response.content
                except openai.APIStatusError as exc:
                    status = exc.status_code
                    detail = self._error_text(exc)
                    if status == 429 or status >= 500:
                        raise _Retryable(status, detail, parse_retry_after(
                            exc.response.headers, self.endpoint.retry_after_cap_s)) from None
                    if status in (400, 422) and kind == "chat":
                        if "seed" in kwargs and "seed" in detail.lower():
                            with self._lock:
                                self._send_seed = False  # remembered for this client
                            continue
                        if mode is not None and mode != STRUCTURED_MODES[-1]:
                            mode = STRUCTURED_MODES[STRUCTURED_MODES.index(mode) + 1]
                            continue
                    raise self._endpoint_error(kind, role, model, status, detail, attempts=attempts) from None
                except openai.APITimeoutError:
                    raise _Retryable(None, f"timed out after {self.endpoint.timeout_s:g}s") from None
                except openai.APIConnectionError as exc:
                    cause = exc.__cause__
                    raise _Retryable(None, f"connection error: {type(cause).__name__ if cause else ''} {cause or exc}") from None
            except _Retryable as failure:
                if retries >= self.endpoint.max_retries:
                    raise self._endpoint_error(kind, role, model, failure.status, failure.reason, attempts=attempts) from None
                retries += 1
                delay = failure.retry_after
                if delay is None:
                    exp = min(self.endpoint.backoff_base_s * (2 ** (retries - 1)), self.endpoint.backoff_max_s)
                    delay = exp * (0.5 + self._rng.random() / 2)  # jitter: 50-100% of the exponential step
                time.sleep(delay)
                continue
            data = self._decode(body, kind, role, model)
            if mode is not None and mode != self._structured_mode:
                with self._lock:
                    self._structured_mode = mode  # remembered for this client
            return _Obtained(body, data, "network", attempts=attempts, mode=mode)

    @staticmethod
    def _error_text(exc: Any) -> str:
        body = getattr(exc, "body", None)
        text = getattr(exc, "message", None) or str(exc)
        if body is not None and not isinstance(body, str):
            try:
                text = f"{text} {json.dumps(body)}"
            except (TypeError, ValueError):
                pass
        return text

    def _endpoint_error(self, kind: str, role: str, model: str, status: int | None, reason: str, *,
                        attempts: int) -> ModelEndpointError:
        reason = redact(reason, self._secrets)
        if len(reason) > _MAX_REASON_CHARS:
            reason = reason[:_MAX_REASON_CHARS] + " ..."
        base = self.endpoint.base_url
        last = f"last status {status}" if status is not None else "no HTTP status"
        message = (
            f"Model endpoint {base} failed for the {role} {kind} call (model {model}) after "
            f"{attempts} attempt(s): {last}: {reason}"
        )
        return ModelEndpointError(redact(message, self._secrets), base_url=base, model=model, role=role,
                                  status=status, reason=reason, attempts=attempts)

    def _emit(self, record: dict[str, Any]) -> None:
        if self.trace is None:
            return
        self.trace(redact_value(record, self._secrets))

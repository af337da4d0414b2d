"""The HTTP side of a model call: one endpoint, its concurrency limit, retries with backoff.

A request waits for room under the endpoint's adaptive limit (:mod:`.adaptive_limit`: fewer in
flight after 429s and timeouts, more while requests succeed, never above the configured
concurrency), is retried on timeouts, connection errors,
429 and 5xx (honouring ``Retry-After``), and falls back when the endpoint refuses a ``seed`` or a
structured-output mode; what it learns (seed refused, the mode that works) is remembered for the
endpoint's client. Every error it raises is a :class:`ModelEndpointError` with the key scrubbed.

The ``openai`` package is imported lazily, when the first network call needs it.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..redaction import redact, url_credentials
from .adaptive_limit import endpoint_limit
from .config import EndpointConfig
from .errors import ModelEndpointError, RunHalted
from .structured import with_schema_instruction
from .wire import JsonObject

STRUCTURED_MODES = ("json_schema", "json_object", "text")
_MAX_REASON_CHARS = 500

#: The least wait before retrying a busy answer, so a Retry-After of 0 cannot make a tight loop.
THROTTLED_MIN_WAIT_S = 0.05


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


@dataclass
class Sent:
    """A successful response as received: the raw body, its decoded JSON, and how it was obtained."""

    body: bytes
    data: JsonObject
    attempts: int
    mode: str | None  # the structured-output mode used, None for a plain call


class _Retryable(Exception):
    def __init__(self, status: int | None, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after


class Transport:
    """The HTTP side of one :class:`EndpointConfig`. Safe to share between threads."""

    def __init__(self, endpoint: EndpointConfig) -> None:
        self.endpoint = endpoint
        # the key, and any password written into the base URL: scrubbed from every error text
        key: tuple[str, ...] = (endpoint.api_key,) if endpoint.api_key else ()
        self.secrets: tuple[str, ...] = key + url_credentials(endpoint.base_url)
        self._lock = threading.Lock()
        self._openai: Any = None
        self._send_seed = endpoint.seed is not None
        self._structured_mode = STRUCTURED_MODES[0]
        self._rng = random.Random()
        self._halt = threading.Lock()  # held from the halt check to the request's journal line
        self._halted: str | None = None

    def halt(self, reason: str) -> None:
        """No request goes out after this returns: one that passed the check before it is already
        journaled as sent (the caller's ``on_request``), so a record written after it counts all."""
        with self._halt:
            self._halted = reason

    @property
    def structured_mode(self) -> str:
        return self._structured_mode

    @property
    def sends_seed(self) -> bool:
        return self._send_seed

    def close(self) -> None:
        with self._lock:
            if self._openai is not None:
                self._openai.close()
                self._openai = None

    def __repr__(self) -> str:
        return f"Transport({self.endpoint!r})"

    # -- decoding and errors ---------------------------------------------------------------------

    def decode(self, body: bytes, kind: str, role: str, model: str, *, attempts: int = 0) -> JsonObject:
        """The JSON of a response body, checked for the shape its kind needs (``attempts``: the
        requests that got it, 0 for a stored body)."""
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise self.error(kind, role, model, None, "response body is not a JSON object", attempts=attempts)
        choices = data.get("choices")
        if kind == "chat" and not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            raise self.error(kind, role, model, None, f"response has no choices: {body[:200]!r}", attempts=attempts)
        if kind == "embeddings" and not isinstance(data.get("data"), list):
            raise self.error(kind, role, model, None, f"response has no data: {body[:200]!r}", attempts=attempts)
        return data

    def error(self, kind: str, role: str, model: str, status: int | None, reason: str, *,
              attempts: int) -> ModelEndpointError:
        """The endpoint failure to raise: key scrubbed, reason cut to a readable length."""
        reason = redact(reason, self.secrets)
        if len(reason) > _MAX_REASON_CHARS:
            reason = reason[:_MAX_REASON_CHARS] + " ..."
        base = self.endpoint.display_url
        last = f"last status {status}" if status is not None else "no HTTP status"
        message = (
            f"Model endpoint {base} failed for the {role} {kind} call (model {model}) after "
            f"{attempts} attempt(s): {last}: {reason}"
        )
        return ModelEndpointError(redact(message, self.secrets), base_url=base, model=model, role=role,
                                  status=status, reason=reason, attempts=attempts)

    def _error_text(self, exc: Any) -> str:
        """The error an endpoint answered, key already scrubbed.

        Redacted here, where the body is first read, so that no frame the client raises from ever
        holds the raw text in a local (``pytest -l`` prints every local of those frames).
        """
        body = getattr(exc, "body", None)
        text = getattr(exc, "message", None) or str(exc)
        if body is not None and not isinstance(body, str):
            try:
                text = f"{text} {json.dumps(body)}"
            except (TypeError, ValueError):
                pass
        return redact(text, self.secrets)

    # -- sending ------------------------------------------------------------------------------------

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

    def _request_kwargs(self, kind: str, logical: JsonObject, structured_schema: JsonObject | None,
                        mode: str) -> JsonObject:
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

    def _delay(self, retry_after: float | None, retry: int) -> float:
        """The wait before retry number `retry`: the endpoint's Retry-After, else exponential backoff."""
        if retry_after is not None:
            return retry_after
        exp = min(self.endpoint.backoff_base_s * (2 ** (retry - 1)), self.endpoint.backoff_max_s)
        return exp * (0.5 + self._rng.random() / 2)  # jitter: 50-100% of the exponential step

    def send(self, kind: str, role: str, model: str, logical: JsonObject, structured_schema: JsonObject | None,
             on_request: Callable[[int], None] | None = None) -> Sent:
        """One logical call over HTTP, with retries and fallbacks; raises :class:`ModelEndpointError`
        (its ``attempts``: the requests sent). ``on_request(n)`` is called as request ``n`` goes
        out (after the concurrency limit let it), so the meter knows what is in flight."""
        if not self.endpoint.base_url:
            raise ModelEndpointError(
                f"No model endpoint base URL configured; cannot make the {role} call (model {model}) "
                "that is not in the cassette or cache.",
                base_url=None, model=model, role=role, attempts=0,
            )
        import openai

        client = self._client()
        limit = endpoint_limit(self.endpoint.endpoint_key, self.endpoint.concurrency)
        mode = self._structured_mode if structured_schema is not None else None
        attempts = 0
        retries = 0  # failures retried (max_retries)
        throttled = 0  # busy answers retried (throttle_wait_s)
        busy_since: float | None = None
        while True:
            kwargs = self._request_kwargs(kind, logical, structured_schema, mode or "json_schema")
            attempts += 1
            try:
                try:
                    with limit.slot() as slot:
                        with self._halt:
                            if self._halted is not None:
                                raise RunHalted(f"no {role} {kind} call is sent once {self._halted}")
                            if on_request is not None:
                                on_request(attempts)
                        try:
                            if kind == "chat":
                                response = client.chat.completions.with_raw_response.create(**kwargs)
                            else:
                                response = client.embeddings.with_raw_response.create(**kwargs)
                            body = response.http_response.content
                        except openai.APIStatusError as exc:
                            if exc.status_code in (429, 503):  # the endpoint says it is overloaded
                                slot.outcome = "throttled"
                            raise
                        except openai.APITimeoutError:
                            slot.outcome = "timeout"
                            raise
                        slot.outcome = "ok"
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
                    raise self.error(kind, role, model, status, detail, attempts=attempts) from None
                except openai.APITimeoutError:
                    raise _Retryable(None, f"timed out after {self.endpoint.timeout_s:g}s") from None
                except openai.APIConnectionError as exc:
                    cause = exc.__cause__
                    raise _Retryable(None, redact(f"connection error: {type(cause).__name__ if cause else ''} "
                                                  f"{cause or exc}", self.secrets)) from None
            except _Retryable as failure:
                if failure.status == 429 and self.endpoint.max_retries > 0:
                    # too many requests: wait as the endpoint asks while the call's wait budget lasts
                    throttled += 1
                    busy_since = busy_since if busy_since is not None else time.monotonic()
                    delay = max(self._delay(failure.retry_after, throttled), THROTTLED_MIN_WAIT_S)
                    if time.monotonic() - busy_since + delay <= self.endpoint.throttle_wait_s:
                        time.sleep(delay)
                        continue
                if retries >= self.endpoint.max_retries:
                    raise self.error(kind, role, model, failure.status, failure.reason, attempts=attempts) from None
                retries += 1
                time.sleep(self._delay(failure.retry_after, retries))
                continue
            data = self.decode(body, kind, role, model, attempts=attempts)
            if mode is not None and mode != self._structured_mode:
                with self._lock:
                    self._structured_mode = mode  # remembered for this client
            return Sent(body, data, attempts, mode)

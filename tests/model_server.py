"""A scripted OpenAI-compatible HTTP server: the test double for every model call.

It is a real HTTP server on 127.0.0.1 (a free port, a background thread) speaking
``POST /v1/chat/completions`` (with ``tools``, ``tool_choice`` and ``response_format``),
``POST /v1/embeddings`` and ``GET /v1/models``, with a ``usage`` field in every reply. It answers
exactly what the test scripts, so the real ``openai`` client path, retries, metering, caps and
error branches can be tested deterministically. It is a test double: nothing it answers says
anything about model quality.

Scripting, in order of precedence for each chat request:

1. the queue: ``server.script(Reply.say("hi"), Reply.fail(429, retry_after=0), ...)`` — each
   request takes the next reply;
2. the responder: ``ScriptedModelServer(responder=fn)`` or ``server.responder = fn``, where
   ``fn(request_json) -> Reply | str | dict | None`` (a ``str`` is a text reply, a ``dict`` a
   JSON-object reply, ``None`` falls through). :class:`Router` builds one that routes on
   prompt content;
3. ``default_reply`` (constructor), else a ``400`` saying that nothing was scripted (counted in
   ``server.unscripted``), so a forgotten script fails loudly without being retried.

Embeddings use ``script_embeddings(...)`` / ``embedding_responder`` and otherwise answer a
deterministic unit vector per input text (``embedding_dim`` wide, derived from its sha256).

Every request is recorded (``server.requests``, ``server.chat_requests``,
``server.request_count``; each a :class:`RecordedRequest` with the parsed JSON ``body``), the
number of requests held at the same time is measured (``server.max_in_flight``: from arrival
until the reply starts, so a client that sends its next request the moment it has a reply is
not counted twice), and the
token usage of every 200 reply is summed (``server.served_usage``).

Default usage per reply, unless the :class:`Reply` overrides it (``usage=`` or ``no_usage=``):
``prompt_tokens = max(1, characters of the request's message contents // 4)`` and
``completion_tokens = max(1, characters of the reply content and tool arguments // 4)``.

Endpoint quirks for fallback tests: ``supports_json_schema=False`` answers 400 to a
``response_format`` of type ``json_schema``; ``supports_json_object=False`` likewise for
``json_object``; ``supports_seed=False`` answers 400 to any request carrying ``seed``. These
rejections do not consume the queue but are recorded as requests.

Use in tests (fixtures below; import them into a conftest.py to use them)::

    from tests.model_server import model_server, model_server_factory  # noqa: F401

    def test_x(model_server):
        model_server.script(Reply.json_object({"entities": []}))
        ... EndpointConfig(base_url=model_server.base_url) ...
        assert model_server.request_count == 1

or without pytest: ``with ScriptedModelServer() as server: ...``.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_UNSET: Any = object()

__all__ = [
    "Reply", "RecordedRequest", "Router", "ScriptedModelServer", "tool_call",
    "model_server", "model_server_factory",
]


def tool_call(name: str, arguments: dict | str | None = None, id: str | None = None) -> dict[str, Any]:
    """One scripted tool call; ``arguments`` as a dict (JSON-encoded for you) or a raw string."""
    return {"name": name, "arguments": arguments if arguments is not None else {}, "id": id}


@dataclass
class Reply:
    """One scripted reply. Build it with the class methods; every field can be combined.

    ``delay`` (seconds) is slept before answering (added to the server's ``latency``);
    ``drop`` closes the connection without any answer (a connection error for the client);
    ``body`` replaces the whole response body with these exact bytes / text / JSON value.
    """

    text: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    json: Any = _UNSET
    status: int = 200
    error: str | None = None
    retry_after: float | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: dict[str, int] | None = None
    no_usage: bool = False
    finish_reason: str | None = None
    embeddings: list[list[float]] | None = None
    body: bytes | str | dict | list | None = None
    drop: bool = False

    @classmethod
    def say(cls, text: str, **kw: Any) -> Reply:
        """A plain assistant text reply."""
        return cls(text=text, **kw)

    @classmethod
    def json_object(cls, value: Any, **kw: Any) -> Reply:
        """An assistant reply whose content is ``json.dumps(value)``."""
        return cls(json=value, **kw)

    @classmethod
    def calls(cls, *calls: dict[str, Any], text: str | None = None, **kw: Any) -> Reply:
        """An assistant reply with tool calls (build each with :func:`tool_call`)."""
        return cls(text=text, tool_calls=list(calls), **kw)

    @classmethod
    def fail(cls, status: int, message: str | None = None, *, retry_after: float | str | None = None,
             **kw: Any) -> Reply:
        """An HTTP error with an OpenAI-style error body, optionally with ``Retry-After``.

        ``{authorization}`` in ``message`` is replaced by the request's Authorization header."""
        return cls(status=status, error=message or f"scripted error {status}", retry_after=retry_after, **kw)

    @classmethod
    def vectors(cls, embeddings: list[list[float]], **kw: Any) -> Reply:
        """An embeddings reply (one vector per input, in order)."""
        return cls(embeddings=embeddings, **kw)

    @classmethod
    def raw(cls, body: bytes | str | dict | list, status: int = 200, **kw: Any) -> Reply:
        """Exactly this response body."""
        return cls(body=body, status=status, **kw)

    @classmethod
    def disconnect(cls, **kw: Any) -> Reply:
        """Close the connection without answering."""
        return cls(drop=True, **kw)

    @property
    def content(self) -> str | None:
        if self.json is not _UNSET:
            return json.dumps(self.json)
        return self.text


@dataclass
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    status: int = 0
    answering: bool = False  # its reply has started: no longer counted in flight

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def model(self) -> str | None:
        return (self.body or {}).get("model")

    @property
    def text(self) -> str:
        """All message contents joined by newlines (for content assertions and routing)."""
        return messages_text(self.body)


def messages_text(body: Any) -> str:
    parts: list[str] = []
    for m in (body or {}).get("messages") or []:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


Responder = Callable[[dict[str, Any]], "Reply | str | dict | None"]


class Router:
    """A responder that routes a chat request on its content, first matching rule wins.

    ``when`` is a substring (searched in all message contents), a compiled regex, or a
    predicate ``fn(request_json) -> bool``; the answer is a :class:`Reply`, a ``str``, a
    ``dict`` (JSON object reply), or a callable ``fn(request_json)`` returning one of those::

        router = Router().on("Extract entities", Reply.json_object({"entities": []}))
        router.on(lambda req: req.get("tools"), Reply.calls(tool_call("search", {"q": "x"})))
        server.responder = router
    """

    def __init__(self, default: Reply | str | dict | Responder | None = None) -> None:
        self.rules: list[tuple[Any, Any]] = []
        self.default = default
        self.hits: collections.Counter[int] = collections.Counter()

    def on(self, when: str | re.Pattern[str] | Callable[[dict], Any], answer: Reply | str | dict | Responder) -> Router:
        self.rules.append((when, answer))
        return self

    def __call__(self, request: dict[str, Any]) -> Reply | str | dict | None:
        text = messages_text(request)
        for i, (when, answer) in enumerate(self.rules):
            if isinstance(when, str):
                matched = when in text
            elif isinstance(when, re.Pattern):
                matched = bool(when.search(text))
            else:
                matched = bool(when(request))
            if matched:
                self.hits[i] += 1
                return answer(request) if callable(answer) and not isinstance(answer, Reply) else answer
        if callable(self.default) and not isinstance(self.default, Reply):
            return self.default(request)
        return self.default


def _approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def default_embedding(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    while len(digest) < dim:
        digest += hashlib.sha256(digest).digest()
    raw = [(b - 127.5) / 127.5 for b in digest[:dim]]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [round(x / norm, 6) for x in raw]


class ScriptedModelServer:
    """See the module docstring. ``start()`` returns ``self``; ``stop()`` is idempotent."""

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        embedding_responder: Callable[[dict[str, Any]], Reply | list[list[float]] | None] | None = None,
        default_reply: Reply | str | dict | None = None,
        latency: float = 0.0,
        embedding_dim: int = 8,
        supports_json_schema: bool = True,
        supports_json_object: bool = True,
        supports_seed: bool = True,
        models: Iterable[str] = ("scripted-model",),
    ) -> None:
        self.responder = responder
        self.embedding_responder = embedding_responder
        self.default_reply = default_reply
        self.latency = latency
        self.embedding_dim = embedding_dim
        self.supports_json_schema = supports_json_schema
        self.supports_json_object = supports_json_object
        self.supports_seed = supports_seed
        self.models = list(models)
        self._lock = threading.Lock()
        self._chat_queue: collections.deque[Reply] = collections.deque()
        self._embedding_queue: collections.deque[Reply] = collections.deque()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.unscripted = 0
        self.served_usage = {"responses": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._counter = 0

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            scripted = server

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"scripted-model-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The API root to give a client, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting -----------------------------------------------------------------------------
    def script(self, *replies: Reply | str | dict) -> ScriptedModelServer:
        """Queue chat replies (a ``str`` is a text reply, a ``dict`` a JSON-object reply)."""
        with self._lock:
            self._chat_queue.extend(_as_reply(r) for r in replies)
        return self

    def script_embeddings(self, *replies: Reply | list[list[float]]) -> ScriptedModelServer:
        with self._lock:
            self._embedding_queue.extend(r if isinstance(r, Reply) else Reply.vectors(r) for r in replies)
        return self

    @property
    def pending(self) -> int:
        """Chat replies still queued."""
        with self._lock:
            return len(self._chat_queue)

    def reset(self) -> None:
        """Forget queued replies, recorded requests and counters (the responder stays)."""
        with self._lock:
            self._chat_queue.clear()
            self._embedding_queue.clear()
            self.requests.clear()
            self.max_in_flight = self.in_flight
            self.unscripted = 0
            self.served_usage = {"responses": 0, "prompt_tokens": 0, "completion_tokens": 0}

    # -- what happened -------------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/embeddings")]

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            return self.requests[-1]

    # -- request handling (called from handler threads) ---------------------------------------------
    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _done(self, req: RecordedRequest) -> None:
        with self._lock:
            if not req.answering:
                req.answering = True
                self.in_flight -= 1

    def _next_chat_reply(self, body: dict[str, Any]) -> Reply | None:
        rf = body.get("response_format") or {}
        if not self.supports_seed and "seed" in body:
            return Reply.fail(400, "Unrecognized request argument supplied: seed")
        if not self.supports_json_schema and rf.get("type") == "json_schema":
            return Reply.fail(400, "response_format type json_schema is not supported by this server")
        if not self.supports_json_object and rf.get("type") == "json_object":
            return Reply.fail(400, "response_format type json_object is not supported by this server")
        with self._lock:
            if self._chat_queue:
                return self._chat_queue.popleft()
        if self.responder is not None:
            answer = self.responder(body)
            if answer is not None:
                return _as_reply(answer)
        if self.default_reply is not None:
            return _as_reply(self.default_reply)
        with self._lock:
            self.unscripted += 1
        return Reply.fail(400, "ScriptedModelServer: no reply scripted for this request")

    def _next_embedding_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._embedding_queue:
                return self._embedding_queue.popleft()
        if self.embedding_responder is not None:
            answer = self.embedding_responder(body)
            if answer is not None:
                return answer if isinstance(answer, Reply) else Reply.vectors(answer)
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        return Reply.vectors([default_embedding(str(t), self.embedding_dim) for t in texts])

    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def _chat_body(self, request: dict[str, Any], reply: Reply) -> tuple[dict[str, Any], int, int]:
        content = reply.content
        message: dict[str, Any] = {"role": "assistant", "content": content}
        completion_text = content or ""
        if reply.tool_calls:
            calls = []
            for i, call in enumerate(reply.tool_calls):
                args = call.get("arguments", {})
                args_text = args if isinstance(args, str) else json.dumps(args)
                completion_text += args_text
                calls.append({"id": call.get("id") or f"call_{self._counter}_{i}", "type": "function",
                              "function": {"name": call["name"], "arguments": args_text}})
            message["tool_calls"] = calls
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        prompt_tokens = _approx_tokens(messages_text(request))
        completion_tokens = _approx_tokens(completion_text)
        if reply.usage:
            prompt_tokens = reply.usage.get("prompt_tokens", prompt_tokens)
            completion_tokens = reply.usage.get("completion_tokens", completion_tokens)
        body: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{self._next_id()}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": request.get("model") or self.models[0],
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        }
        if not reply.no_usage:
            body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
        return body, prompt_tokens, completion_tokens

    def _embedding_body(self, request: dict[str, Any], reply: Reply) -> tuple[dict[str, Any], int]:
        inputs = request.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        prompt_tokens = sum(_approx_tokens(str(t)) for t in texts)
        if reply.usage:
            prompt_tokens = reply.usage.get("prompt_tokens", prompt_tokens)
        body: dict[str, Any] = {
            "object": "list",
            "model": request.get("model") or self.models[0],
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(reply.embeddings or [])],
        }
        if not reply.no_usage:
            body["usage"] = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
        return body, prompt_tokens


def _as_reply(answer: Reply | str | dict) -> Reply:
    if isinstance(answer, Reply):
        return answer
    if isinstance(answer, str):
        return Reply.say(answer)
    if isinstance(answer, (dict, list)):
        return Reply.json_object(answer)
    raise TypeError(f"cannot turn {type(answer).__name__} into a Reply")


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedModelServer
    # Keep-alive, as real servers: a new TCP connection per call cost the benches measurable CPU.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no delayed-ACK stall
    server_version = "ScriptedModelServer/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            data = {"object": "list",
                    "data": [{"id": m, "object": "model", "owned_by": "scripted"} for m in self.scripted.models]}
            self._send(200, json.dumps(data).encode(), {})
        else:
            self._send(404, _error_body("not found", 404), {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        server = self.scripted
        req = RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.time())
        server._record(req)
        try:
            path = self.path.split("?")[0].rstrip("/")
            if not isinstance(body, dict):
                return self._reply(req, Reply.fail(400, "request body is not a JSON object"))
            if path.endswith("/chat/completions"):
                if not isinstance(body.get("messages"), list) or not body.get("model"):
                    return self._reply(req, Reply.fail(400, "'model' and 'messages' are required"))
                return self._reply(req, server._next_chat_reply(body), kind="chat")
            if path.endswith("/embeddings"):
                if "input" not in body or not body.get("model"):
                    return self._reply(req, Reply.fail(400, "'model' and 'input' are required"))
                return self._reply(req, server._next_embedding_reply(body), kind="embeddings")
            return self._reply(req, Reply.fail(404, f"unknown path {self.path}"))
        finally:
            server._done(req)

    def _reply(self, req: RecordedRequest, reply: Reply, kind: str | None = None) -> None:
        server = self.scripted
        wait = server.latency + reply.delay
        if wait > 0:
            time.sleep(wait)
        server._done(req)
        if reply.drop:
            req.status = -1
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.close_connection = True
            return
        headers = dict(reply.headers)
        if reply.retry_after is not None:
            headers["Retry-After"] = str(reply.retry_after)
        prompt = completion = 0
        if reply.body is not None:
            out = reply.body if isinstance(reply.body, bytes) else (
                reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode())
        elif reply.status != 200:
            # "{authorization}" in a scripted error echoes the request's Authorization header, as
            # some real endpoints quote the key they refuse
            message = (reply.error or "error").replace("{authorization}", req.headers.get("authorization", ""))
            out = _error_body(message, reply.status)
        elif kind == "chat":
            data, prompt, completion = server._chat_body(req.body, reply)
            out = json.dumps(data).encode()
        elif kind == "embeddings":
            data, prompt = server._embedding_body(req.body, reply)
            out = json.dumps(data).encode()
        else:
            out = _error_body("nothing to answer", 500)
        req.status = reply.status
        if reply.status == 200 and kind is not None:
            with server._lock:
                server.served_usage["responses"] += 1
                if not reply.no_usage and reply.body is None:
                    server.served_usage["prompt_tokens"] += prompt
                    server.served_usage["completion_tokens"] += completion
        self._send(reply.status, out, headers)

    def _send(self, status: int, out: bytes, headers: dict[str, str]) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(out)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout); nothing to do


def _error_body(message: str, status: int) -> bytes:
    kind = "rate_limit_error" if status == 429 else ("server_error" if status >= 500 else "invalid_request_error")
    return json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()


# -- pytest fixtures (import these into a conftest.py) ----------------------------------------------


@pytest.fixture
def model_server() -> Iterable[ScriptedModelServer]:
    """A started :class:`ScriptedModelServer` with default settings, stopped after the test."""
    server = ScriptedModelServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def model_server_factory() -> Iterable[Callable[..., ScriptedModelServer]]:
    """``make(**kwargs) -> started ScriptedModelServer``; every server made is stopped after the test."""
    servers: list[ScriptedModelServer] = []

    def make(**kwargs: Any) -> ScriptedModelServer:
        server = ScriptedModelServer(**kwargs).start()
        servers.append(server)
        return server

    try:
        yield make
    finally:
        for server in servers:
            server.stop()

"""The model relay: an OpenAI-compatible HTTP endpoint on 127.0.0.1 in front of the one model client.

A third-party memory system (mem0, Graphiti, ...) calls models with its own HTTP client; pointed
at the relay, every chat call it makes goes through :class:`~.client.ModelClient`, so it is metered,
capped, cached, recorded and replayed from cassettes, and traced exactly like the built-in
system's calls. Each system gets its own base URL, one per harness role::

    relay = ModelRelay(client, embed=embedder.embed).start()
    relay.base_url("mem0", "extraction")   # http://127.0.0.1:PORT/mem0/extraction/v1

A chat call there is sent as role ``extraction`` (that role's model, the budget's role) and metered
in the row ``"mem0 extraction"``; ``/v1/embeddings`` is served by ``embed`` (the run's embedder: the
in-process MiniLM, or the endpoint's embeddings through the same client, then metered as
``"mem0 embedding"``). The relay counts every request it receives per system and kind
(:meth:`counts`), so a run can show that what its meter counted is what the systems asked for.

What is forwarded: ``messages``, ``tools``, ``tool_choice``, ``max_tokens`` (or
``max_completion_tokens``) and ``response_format``. Sampling settings (temperature, top_p, seed) are
the run's, as for every call of the harness; ``stream`` and ``n`` > 1 are refused with a 400 that
says so. A failure the harness must act on (spend cap, cassette miss, endpoint down after the
client's retries) is answered with an error status and ``x-should-retry: false`` (the caller's
client must not multiply calls), and kept: :meth:`take_failure` hands the harness's own exception
back to the adapter, which raises it instead of the library's wrapped error.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, TypedDict

from .config import ROLES, Role, is_role
from .errors import BudgetExceeded, CassetteMiss, ModelEndpointError, ModelError
from .meter import Meter, Snapshot, Usage
from .wire import JsonObject

if TYPE_CHECKING:
    from .client import ModelClient

__all__ = ["LIBRARY_CLIENT_OPTIONS", "LabelledMeter", "ModelRelay", "RelayCounts", "meter_row"]


class LibraryClientOptions(TypedDict):
    """Keywords of an ``openai`` client's ``with_options``."""

    timeout: None
    max_retries: int


# What an outside library's own `openai` client is given (`client.with_options(**...)`): no timeout
# and no retry of its own. The harness bounds each call (its timeout per attempt, its retries) and the
# relay always answers, while a library's default (600 s, 2 retries) counts the time a call waits
# for the endpoint's one slot: on the embedded model Graphiti gave up on a call still queued, and a
# retry of its own would have sent the call twice.
LIBRARY_CLIENT_OPTIONS: LibraryClientOptions = {"timeout": None, "max_retries": 0}

_PATH = re.compile(r"^/(?P<system>[A-Za-z0-9_.-]+)/(?P<role>[a-z]+)/v1/(?P<what>chat/completions|embeddings|models)/?$")
_FORWARDED = ("messages", "tools", "tool_choice", "response_format")


def meter_row(system: str, role: str) -> str:
    """The meter's row for a relayed call: ``"mem0 extraction"``, ``"graphiti embedding"``."""
    return f"{system} {role}"


class LabelledMeter(Meter):
    """Records into another meter under ``"<system> <role>"`` rows; reads are the inner meter's."""

    def __init__(self, inner: Meter, system: str) -> None:
        self.inner = inner
        self.system = system

    def new_call(self) -> int:
        return self.inner.new_call()

    def sent(self, role: str, call: int, attempt: int) -> None:
        self.inner.sent(meter_row(self.system, role), call, attempt)

    def record(self, role: str, usage: Usage, call: int | None = None) -> None:
        self.inner.record(meter_row(self.system, role), usage, call)

    def snapshot(self) -> Snapshot:
        return self.inner.snapshot()

    def merge(self, other: Any) -> None:  # pragma: no cover - a view is never merged into
        raise TypeError("a LabelledMeter is a view; merge into its inner meter")


class RelayCounts:
    """Requests the relay received, per system and kind (``chat``, ``embeddings``, ``errors``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_system: dict[str, dict[str, int]] = {}

    def add(self, system: str, kind: str, n: int = 1) -> None:
        with self._lock:
            row = self._by_system.setdefault(system, {"chat": 0, "embeddings": 0, "errors": 0})
            row[kind] = row.get(kind, 0) + n

    def to_dict(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {s: dict(row) for s, row in self._by_system.items()}


class ModelRelay:
    """One OpenAI-compatible HTTP server per process, forwarding through ``client``.

    ``embed(system, texts)`` serves ``/v1/embeddings`` (unit vectors, in order). Start it with
    :meth:`start`, stop it with :meth:`close`; it is safe to call from many threads at once.
    """

    def __init__(self, client: ModelClient, embed: Callable[[str, Sequence[str]], list[list[float]]],
                 *, dimensions: int, embedding_model: str = "pytest-beam-embedder") -> None:
        self.client = client
        self.embed = embed
        self.dimensions = dimensions  # what a caller configures its vector store with
        self.embedding_model = embedding_model
        self.requests = RelayCounts()
        self._clients: dict[str, ModelClient] = {}
        self._failures: dict[str, ModelError] = {}
        self._completion_caps: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life -------------------------------------------------------------------------------------

    def start(self) -> ModelRelay:
        if self._server is not None:
            return self
        relay = self

        class Handler(_Handler):
            owner = relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="pytest-beam-relay", daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the model relay is not started")
        return int(self._server.server_address[1])

    def base_url(self, system: str, role: str) -> str:
        """The OpenAI base URL (with ``/v1``) for ``system`` calling as harness role ``role``."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", system):
            raise ValueError(f"system name {system!r} cannot be a relay path (letters, digits, '_', '.', '-')")
        return f"http://127.0.0.1:{self.port}/{system}/{role}/v1"

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ModelRelay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the adapters use --------------------------------------------------------------------

    def counts(self) -> dict[str, dict[str, int]]:
        return self.requests.to_dict()

    def take_failure(self, system: str) -> ModelError | None:
        """The first harness-side failure (cap, cassette miss, endpoint) since the last take, if any."""
        with self._lock:
            return self._failures.pop(system, None)

    def raise_failure(self, system: str, cause: BaseException | None = None) -> None:
        """Raise the kept failure of ``system`` (from ``cause``, the library's error) when there is one."""
        failure = self.take_failure(system)
        if failure is not None:
            raise failure from cause

    def client_for(self, system: str) -> ModelClient:
        """The run's client metering into ``"<system> <role>"`` rows and tracing ``via: relay``."""
        with self._lock:
            twin = self._clients.get(system)
            if twin is None:
                twin = self.client.sibling(LabelledMeter(self.client.meter, system))
                trace = self.client.trace
                if trace is not None:
                    twin.trace = lambda event, _t=trace: _t({**event, "via": "relay", "relay_system": system})
                self._clients[system] = twin
            return twin

    # -- serving ------------------------------------------------------------------------------------

    def cap_completion(self, system: str, max_tokens: int) -> None:
        """No relayed call of ``system`` may ask for more than ``max_tokens`` completion tokens: a
        library's own per-call maximum (Graphiti asks 16,384 for edge extraction) is what a small
        model that repeats itself fills, for an hour on the embedded model, whatever its config says."""
        if max_tokens < 1:
            raise ValueError(f"a completion cap must be 1 or more, not {max_tokens}")
        self._completion_caps[system] = max_tokens

    def _keep(self, system: str, exc: ModelError) -> None:
        with self._lock:
            self._failures.setdefault(system, exc)

    def handle_chat(self, system: str, role: Role, body: JsonObject) -> tuple[int, bytes]:
        if body.get("stream"):
            return _error(400, "the pytest-beam relay does not stream: send stream=false")
        if int(body.get("n") or 1) != 1:
            return _error(400, "the pytest-beam relay answers one choice per call: send n=1")
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return _error(400, "chat/completions needs a non-empty 'messages' list")
        kwargs = {k: body[k] for k in _FORWARDED if body.get(k) is not None}
        asked = body.get("max_completion_tokens") or body.get("max_tokens")
        cap = self._completion_caps.get(system)
        max_tokens = min(int(asked), cap) if asked and cap else int(asked) if asked else cap
        result = self.client_for(system).chat(role=role, max_tokens=max_tokens,
                                              **{k: v for k, v in kwargs.items() if k != "messages"},
                                              messages=kwargs["messages"])
        return 200, result.raw

    def handle_embeddings(self, system: str, body: JsonObject) -> tuple[int, bytes]:
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error(400, "embeddings needs 'input' as a string or a list of strings (token ids are not served)")
        vectors = self.embed(system, texts) if texts else []
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, vector in enumerate(vectors):
            value: Any = (base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
                          if as_base64 else vector)
            data.append({"object": "embedding", "index": i, "embedding": value})
        tokens = sum(len(t.split()) for t in texts)
        reply = {"object": "list", "data": data, "model": body.get("model") or self.embedding_model,
                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        return 200, json.dumps(reply).encode("utf-8")


def _error(status: int, message: str, kind: str = "invalid_request_error") -> tuple[int, bytes]:
    return status, json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    owner: ModelRelay
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the trace has every call
        return

    def _reply(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if status >= 400:
            self.send_header("x-should-retry", "false")  # the client retried already; never multiply calls
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        match = _PATH.match(self.path.split("?", 1)[0])
        if match is None or match.group("what") != "models":
            self._reply(*_error(404, f"no such relay path {self.path}"))
            return
        role = match.group("role")
        if role not in ROLES:
            self._reply(*_error(404, f"unknown role {role!r} in relay path"))
            return
        model = self.owner.client.models.for_role(role)
        self._reply(200, json.dumps({"object": "list", "data": [{"id": model, "object": "model"}]}).encode())

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        match = _PATH.match(self.path.split("?", 1)[0])
        if match is None or match.group("what") == "models":
            self._reply(*_error(404, f"no such relay path {self.path}: use /<system>/<role>/v1/chat/completions "
                                     "or /<system>/<role>/v1/embeddings"))
            return
        system, role, what = match.group("system"), match.group("role"), match.group("what")
        kind = "chat" if what == "chat/completions" else "embeddings"
        counts = self.owner.requests
        counts.add(system, kind)
        if not is_role(role):
            counts.add(system, "errors")
            self._reply(*_error(404, f"unknown role {role!r} in relay path; expected one of {', '.join(ROLES)}"))
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            counts.add(system, "errors")
            self._reply(*_error(400, f"request body is not JSON: {exc}"))
            return
        try:
            if kind == "chat":
                status, payload = self.owner.handle_chat(system, role, body)
            else:
                status, payload = self.owner.handle_embeddings(system, body)
        except BudgetExceeded as exc:
            self.owner._keep(system, exc)
            status, payload = _error(429, f"pytest-beam spend cap: {exc}", "budget_exceeded")
        except CassetteMiss as exc:
            self.owner._keep(system, exc)
            status, payload = _error(409, f"pytest-beam cassette: {exc}", "cassette_miss")
        except ModelEndpointError as exc:
            self.owner._keep(system, exc)
            upstream = exc.status if exc.status and 400 <= exc.status < 500 else 502
            status, payload = _error(upstream, f"pytest-beam model endpoint: {exc}", "upstream_error")
        except ModelError as exc:
            self.owner._keep(system, exc)
            status, payload = _error(500, f"pytest-beam: {exc}", "relay_error")
        except Exception as exc:  # the embedder or a bug: the caller sees it, the adapter re-raises it
            self.owner._keep(system, ModelError(f"model relay: {type(exc).__name__}: {exc}"))
            status, payload = _error(500, f"pytest-beam relay: {type(exc).__name__}: {exc}", "relay_error")
        if status >= 400:
            counts.add(system, "errors")
        self._reply(status, payload)


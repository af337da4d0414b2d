"""The child's side of the JSON-lines protocol: one request per line on stdin, one reply per line.

A request is `{"op": NAME, ...}`; the reply `{"ok": true, "result": ...}` or `{"ok": false, "error":
"<type>: <message>", "kind": ...}`. The replies go to a private copy of the process's stdout; the
real stdout is pointed at stderr first, so whatever the library prints never corrupts a reply
(the parent keeps stderr in a log file beside the system's storage). The handlers are coroutines,
all run on one event loop, one at a time, in the order they came.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

# One request or reply of the protocol as JSON gives it: its fields are each op's own (open by nature:
# the ops differ, and each system's child defines its own).
Message: TypeAlias = dict[str, Any]
Handler = Callable[[Message], Awaitable[Any]]


class Unusable(Exception):
    """The library gave up on what the model wrote (counted by the parent as an empty extraction)."""


def _private_stdout() -> Any:
    fd = os.dup(1)
    os.dup2(2, 1)  # prints and logging to stdout now land in the log, not in the replies
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8")


def serve(handlers: dict[str, Handler]) -> int:
    replies = _private_stdout()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            op = str(request.get("op"))
            try:
                handler = handlers[op]
                result = loop.run_until_complete(handler(request))
                reply: Message = {"ok": True, "result": result}
            except Unusable as exc:
                reply = {"ok": False, "kind": "unusable", "error": str(exc)}
            except Exception as exc:  # noqa: BLE001 -- sent to the parent, which raises it as its own error
                traceback.print_exc(file=sys.stderr)
                reply = {"ok": False, "kind": "error", "error": f"{type(exc).__name__}: {exc}"}
            replies.write(json.dumps(reply, default=str) + "\n")
            if op == "close":
                break
    finally:
        close_loop(loop)
    return 0


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what a library left running on the loop (worker tasks, health checks), let the
    cancellations finish, then close it. Also used by the outside systems in the harness's process
    (outside.py): this module imports the standard library only."""
    try:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()

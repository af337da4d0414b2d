"""Loaded by every Python process of a test run that puts this folder on PYTHONPATH (the harness,
and through BEAM_CHILD_PYTHONPATH the outside systems' own processes): a connection to anything but
this machine fails, and is written to $BEAM_NETWORK_LOG, so a test can show that nothing went out."""

import os
import socket

_LOG = os.environ.get("BEAM_NETWORK_LOG")
_LOCAL = ("127.", "::1", "localhost", "0.0.0.0")


def _refuse(what: str, target: object) -> None:
    if _LOG:
        with open(_LOG, "a") as log:
            log.write(f"{os.getpid()} {what} {target!r}\n")
    raise OSError(f"no network in this test: {what} {target!r}")


def _local(host: object) -> bool:
    return isinstance(host, str) and (host.startswith(_LOCAL) or host == "")


_connect = socket.socket.connect
_getaddrinfo = socket.getaddrinfo


def connect(self: socket.socket, address: object) -> None:
    if self.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple) and not _local(address[0]):
        _refuse("connect", address)
    return _connect(self, address)


def getaddrinfo(host: object, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
    if host is not None and not _local(host if not isinstance(host, bytes) else host.decode()):
        _refuse("resolve", host)
    return _getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


socket.socket.connect = connect  # type: ignore[method-assign]
socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]

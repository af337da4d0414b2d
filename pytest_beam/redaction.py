"""Keeping secrets out of everything pytest-beam writes: errors, traces, records, XML.

One home for redaction, used by the model client, the trace writer, the record and the Neo4j
providers: an API key is replaced wherever it appears in text, a setting whose name says it is a
secret never keeps its value, and credentials written into a URL (``https://user:pass@host``,
``bolt://neo4j:pw@host``) are dropped before the URL is shown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from pydantic import JsonValue

REDACTED = "***"
_SECRET_NAME = re.compile(r"(api[_-]?key|secret|password|passwd|(^|_)token)$", re.IGNORECASE)


def _real(secrets: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(s for s in secrets if s and len(s) >= 4)


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every occurrence of every (non-trivial) secret replaced."""
    for secret in _real(secrets):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_value(value: Any, secrets: tuple[str, ...]) -> Any:
    """Recursively scrub strings inside dicts/lists/tuples (keys included)."""
    if not _real(secrets):
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {redact_value(k, secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v, secrets) for v in value)
    return value


def url_without_credentials(url: str) -> str:
    """``url`` with any ``user:password@`` part removed; anything that is not a URL unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def url_credentials(url: str | None) -> tuple[str, ...]:
    """The secrets written into a URL's ``user:password@`` part (the password, and user:password).

    Given to :func:`redact` with the API key, so a server or library that quotes the URL back
    cannot put the password into an error.
    """
    if not url:
        return ()
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    if parts.password:
        return (f"{parts.username or ''}:{parts.password}", parts.password)
    return ()


def scrub_settings(settings: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A settings mapping fit to write: secret-named values hidden, URLs without credentials (a
    record's settings, of whichever version wrote it: any JSON)."""
    out: dict[str, JsonValue] = {}
    for key, value in settings.items():
        if isinstance(value, str) and value and _SECRET_NAME.search(str(key)):
            out[key] = "<redacted>"
        elif isinstance(value, dict):
            out[key] = scrub_settings(value)
        elif isinstance(value, str) and "://" in value:
            out[key] = url_without_credentials(value)
        else:
            out[key] = value
    return out

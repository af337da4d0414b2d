"""Scrubbing secrets out of text and JSON-able values before they leave the client."""

from __future__ import annotations

from typing import Any

REDACTED = "***"


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """Return ``text`` with every occurrence of every (non-trivial) secret replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_value(value: Any, secrets: tuple[str, ...]) -> Any:
    """Recursively scrub strings inside dicts/lists/tuples (keys included)."""
    if not any(s and len(s) >= 4 for s in secrets):
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {redact_value(k, secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v, secrets) for v in value)
    return value

"""Errors of the model layer. Every one subclasses :class:`ModelError`.

No message built here ever contains an API key: the client scrubs the key out of any text it
puts into an error (see :func:`pytest_beam.redaction.redact`), and errors are raised
``from None`` so that no chained exception (whose request objects carry the ``Authorization``
header) hangs off them.
"""

from __future__ import annotations


class ModelError(Exception):
    """Base class of every error raised by :mod:`pytest_beam.llm`."""


class ModelEndpointError(ModelError):
    """The endpoint failed for good: after the last retry, or with a non-retryable status.

    Attributes: ``base_url``, ``model``, ``role``, ``status`` (last HTTP status or None),
    ``reason`` (last exception type and message, key scrubbed), ``attempts`` (HTTP requests made).
    """

    def __init__(
        self,
        message: str,
        *,
        base_url: str | None = None,
        model: str | None = None,
        role: str | None = None,
        status: int | None = None,
        reason: str | None = None,
        attempts: int = 0,
    ) -> None:
        super().__init__(message)
        self.base_url = base_url
        self.model = model
        self.role = role
        self.status = status
        self.reason = reason
        self.attempts = attempts


class StructuredOutputError(ModelError):
    """The reply did not validate against the schema, even after the one retry.

    Attributes: ``role``, ``model``, ``schema_name``, ``validation_error`` (text of the last
    error), ``raw_text`` (the last reply), ``attempts``, ``usage`` (summed over the attempts).
    """

    def __init__(
        self,
        message: str,
        *,
        role: str,
        model: str,
        schema_name: str,
        validation_error: str,
        raw_text: str | None,
        attempts: int,
        usage=None,
    ) -> None:
        super().__init__(message)
        self.role = role
        self.model = model
        self.schema_name = schema_name
        self.validation_error = validation_error
        self.raw_text = raw_text
        self.attempts = attempts
        self.usage = usage


class BudgetExceeded(ModelError):
    """The spend cap refused a call before it was sent.

    Attributes: ``cap`` ("calls" or "tokens"), ``used``, ``limit``, ``flag`` (the command-line
    flag that raises this cap), ``role`` (of the refused call).
    """

    def __init__(self, message: str, *, cap: str, used: int, limit: int, flag: str, role: str | None) -> None:
        super().__init__(message)
        self.cap = cap
        self.used = used
        self.limit = limit
        self.flag = flag
        self.role = role


class CassetteMiss(ModelError):
    """Record mode ``none`` and the request is not in the cassette (no network is ever used).

    Attributes: ``cassette`` (path), ``role``, ``model``, ``fingerprint``.
    """

    def __init__(self, message: str, *, cassette: str, role: str, model: str, fingerprint: str) -> None:
        super().__init__(message)
        self.cassette = cassette
        self.role = role
        self.model = model
        self.fingerprint = fingerprint

"""Errors of the model layer. Every one subclasses :class:`ModelError`.

No message built here ever contains an API key: the client scrubs the key out of any text it
puts into an error (see :func:`pytest_beam.redaction.redact`), and errors are raised
``from None`` so that no chained exception (whose request objects carry the ``Authorization``
header) hangs off them.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any


class ModelError(Exception):
    """Base class of every error raised by :mod:`pytest_beam.llm`."""


class RunHalted(ModelError):
    """The run is writing its record: no request goes out any more (one still in flight is the
    record's to count as abandoned; one not yet sent is never sent, so the record holds every one)."""


# Each error is a dataclass (keyword-only details after the message), so its attributes are
# declared once; ``str(error)`` is the message, as for any exception. The decorator is written out
# on each class: a type checker sees a dataclass only through ``dataclass`` itself, not an alias.
@dataclass(eq=False, repr=False)
class _Detailed(ModelError):
    message: str

    def __post_init__(self) -> None:
        super().__init__(self.message)


@dataclass(eq=False, repr=False)
class ModelEndpointError(_Detailed):
    """The endpoint failed for good: after the last retry, or with a non-retryable status.

    Attributes: ``base_url``, ``model``, ``role``, ``status`` (last HTTP status or None),
    ``reason`` (last exception type and message, key scrubbed), ``attempts`` (HTTP requests made).
    """

    _: KW_ONLY
    base_url: str | None = None
    model: str | None = None
    role: str | None = None
    status: int | None = None
    reason: str | None = None
    attempts: int = 0


@dataclass(eq=False, repr=False)
class StructuredOutputError(_Detailed):
    """The reply did not validate against the schema, even after the one retry.

    Attributes: ``role``, ``model``, ``schema_name``, ``validation_error`` (text of the last
    error), ``raw_text`` (the last reply), ``attempts``, ``usage`` (summed over the attempts).
    """

    _: KW_ONLY
    role: str
    model: str
    schema_name: str
    validation_error: str
    raw_text: str | None
    attempts: int
    usage: Any = None


@dataclass(eq=False, repr=False)
class BudgetExceeded(_Detailed):
    """The spend cap refused a call before it was sent.

    Attributes: ``cap`` ("calls" or "tokens"), ``used``, ``limit``, ``flag`` (the command-line
    flag that raises this cap), ``role`` (of the refused call).
    """

    _: KW_ONLY
    cap: str
    used: int
    limit: int
    flag: str
    role: str | None


@dataclass(eq=False, repr=False)
class CassetteMiss(_Detailed):
    """Record mode ``none`` and the request is not in the cassette (no network is ever used).

    Attributes: ``cassette`` (path), ``role``, ``model``, ``fingerprint``.
    """

    _: KW_ONLY
    cassette: str
    role: str
    model: str
    fingerprint: str


@dataclass(eq=False, repr=False)
class CassetteError(_Detailed):
    """A cassette file has a line that is not a recorded response: named by file and line number.

    Attributes: ``path`` (the cassette), ``line`` (1-based line number), ``why``.
    """

    _: KW_ONLY
    path: str
    line: int
    why: str

"""The model layer: every model call of pytest-beam goes through :class:`ModelClient`.

Roles, retries, metering, the response cache, record/replay cassettes and spend caps. This
package knows nothing of BEAM, Neo4j or pytest, and importing it does not import ``openai``
(that happens on the first network call).

Typical wiring::

    client = ModelClient(
        EndpointConfig(base_url="http://127.0.0.1:8080/v1", api_key=key),
        RoleModels(agent="qwen2.5-7b", judge="gpt-4o-mini"),
        meter=Meter(), cache=ResponseCache(run_dir / "cache"),
        cassette=Cassette("fixtures/cassettes/lite.jsonl", mode="none"),
        budget=FileBudget.in_run_dir(run_dir, max_calls=40, max_tokens=120_000),
        trace=trace_writer,
    )
    result = client.chat(role="agent", messages=[...], tools=[...])
    parsed = client.structured(role="extraction", messages=[...], schema=Extraction)
"""

from .adaptive_limit import endpoint_limit
from .budget import CALLS_FLAG, TOKENS_FLAG, Budget, FileBudget
from .cache import CorruptCacheEntry, ResponseCache, cache_key, canonical_json, fingerprint
from .cassette import MODES as RECORD_MODES
from .cassette import Cassette
from .client import ModelClient
from .config import EMBEDDING_ROLE, ROLES, EndpointConfig, Role, RoleModels
from .errors import BudgetExceeded, CassetteError, CassetteMiss, ModelEndpointError, ModelError, StructuredOutputError
from .meter import Meter, Snapshot, Usage, UsageJournal, add_usage, read_journals
from .replies import ChatResult, StructuredResult, ToolCall
from .structured import StructuredParseError, extract_json_object, parse_structured
from .transport import parse_retry_after

__all__ = [
    "Role", "ROLES", "EMBEDDING_ROLE", "EndpointConfig", "RoleModels",
    "ModelClient", "ChatResult", "StructuredResult", "ToolCall", "endpoint_limit", "parse_retry_after",
    "Usage", "Snapshot", "Meter", "UsageJournal", "read_journals", "add_usage",
    "Budget", "FileBudget", "CALLS_FLAG", "TOKENS_FLAG",
    "ResponseCache", "CorruptCacheEntry", "cache_key", "canonical_json", "fingerprint",
    "Cassette", "RECORD_MODES",
    "ModelError", "ModelEndpointError", "StructuredOutputError", "BudgetExceeded", "CassetteMiss", "CassetteError",
    "StructuredParseError", "extract_json_object", "parse_structured",
]

"""The option table and the one frozen settings object a run reads (`--beam-*` flags, `beam_*` ini keys, `BEAM_*`).

The option table below is the single source for all three spellings, the help text (of pytest's
options, of the `pytest-beam` command's and of docs/configuration.md), each option's own checks,
and whether a cassette records it; `setting_sources.resolve` reads the values (flag, then
environment variable, then ini key, then the default). A new option is a row here and a field of
`Settings`, and the code that reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypedDict, cast

from .scoring.judge_bars import DEFAULT_BAR, DEFAULT_FAIL_BAR
from .scoring.profile_names import DEFAULT_PROFILE, PROFILE_NAMES
from .scoring.profile_names import choices_text as profile_choices
from .system_registry import DEFAULT_SYSTEM
from .system_registry import choices_text as system_choices

if TYPE_CHECKING:
    from .data.sets import Mode
    from .llm.cassette import QuestionSet, RecordedSettings
    from .scoring.profile_names import ProfileName

MODES = ("lite", "full", "complete")
TIERS = ("100K", "500K", "1M", "10M")  # pytest_beam.data.ids.TIERS (this module imports no other room)
RECORD_MODES = ("off", "none", "once", "new_episodes", "all")
SNAPSHOT_MODES = ("assert", "report", "off")
TOOL_MODES = ("auto", "native", "json")


class SettingsError(Exception):
    """A setting has a value the harness cannot use; the message names the flag and the fix."""


#: A check of an option's value: None when the value is usable, else what is wrong with it.
Check = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class Option:
    name: str  # attribute name; flag --beam-<name with dashes>, ini beam_<name>, env BEAM_<NAME>
    help: str
    default: Any = None
    kind: Callable[[str], Any] = str
    choices: tuple[str, ...] | None = None
    env: tuple[str, ...] = ()  # extra environment variables, after BEAM_<NAME>
    flag: bool = True  # secrets get no flag (a flag shows in `ps` and shell history) and no ini key
    is_bool: bool = False
    check: Check | None = None  # the value's own bounds, checked once it is read
    path: bool = False  # a path: resolved where it was written (a flag's, a variable's, an ini file's)
    recorded: bool = False  # shapes a run's requests or scores: a cassette's header records it (RECORDED_SETTINGS)
    question_set: bool = False  # chooses the questions: a cassette's header says it, never sets it (QUESTION_SET)
    empty_means_unset: bool = False  # `--beam-data=` or `BEAM_DATA=`: unset, above an ini file's value

    @property
    def env_only(self) -> bool:
        """A secret: read from the environment only (no flag, no ini key in a committed file)."""
        return not self.flag

    @property
    def flag_name(self) -> str:
        return "--beam-" + self.name.replace("_", "-")

    @property
    def ini_name(self) -> str:
        return "beam_" + self.name

    @property
    def env_names(self) -> tuple[str, ...]:
        return ("BEAM_" + self.name.upper(), *self.env)


def _bool(value: str) -> bool:
    lowered = str(value).strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"{value!r} is not a boolean")


def _conversation_list(value: str) -> str | None:
    """Checked as a list of numbers; its range is the tier's, checked once the tier is known
    (`resolve`), by the data layer's parser, which says what is wrong."""
    from .data.data_error import BeamDataError
    from .data.sets import parse_conversations

    try:
        chosen = parse_conversations(value, tier=None)
    except BeamDataError as exc:
        raise ValueError(str(exc)) from exc
    return None if chosen is None else ",".join(chosen)


def _optional_int(value: str) -> int | None:
    return None if str(value).strip().lower() in {"", "none", "unlimited"} else int(value)


NEO4J_PROVIDERS = ("auto", "docker", "local")


def _neo4j_spec(value: str) -> str:
    """A provider name or a bolt URI; checked here so a typo stops the run at start, not at the
    first conversation's fixture."""
    from .services.external import BOLT_SCHEMES, is_bolt_uri

    spec = str(value).strip()
    if spec.lower() in NEO4J_PROVIDERS:
        return spec.lower()
    if is_bolt_uri(spec):
        return spec
    raise ValueError(f"choose one of {', '.join(NEO4J_PROVIDERS)} or a URI of an existing server "
                     f"({', '.join(s + '://' for s in BOLT_SCHEMES)})")


JUDGE_CHECK_WORDS = ("off", "auto", "on", "all")


def _judge_check_spec(value: str) -> str:
    """off, auto, on, all, or a number of cases (checked here so a typo stops the run at start)."""
    spec = str(value).strip().lower()
    if spec in JUDGE_CHECK_WORDS:
        return spec
    if spec.isdigit() and int(spec) >= 1:
        return str(int(spec))
    raise ValueError(f"choose one of {', '.join(JUDGE_CHECK_WORDS)} or a number of cases (1 or more)")


def _shard_spec(value: str) -> str | None:
    """K/N with 1 <= K <= N (checked here so a typo stops the run at start)."""
    from .data.shards import parse_shard

    spec = str(value).strip()
    if not spec or spec.lower() == "none":
        return None
    parse_shard(spec)
    return spec


EMBEDDERS = ("local", "local-export")


def _embeddings_spec(value: str) -> str:
    spec = str(value).strip()
    if spec in EMBEDDERS or (spec.startswith("endpoint:") and spec[len("endpoint:"):].strip()):
        return spec
    raise ValueError(f"choose one of {', '.join(EMBEDDERS)} or endpoint:<model>")


def at_least(low: int) -> Check:
    return lambda v: None if v is None or v >= low else ("must be 0 or more" if low == 0 else f"must be at least {low}")


def seconds(value: float) -> str | None:
    return None if value > 0 else "must be more than 0 seconds"


def between(low: float, high: float, what: str = "must be") -> Check:
    return lambda v: None if low <= v <= high else f"{what} between {low:g} and {high:g}"


OPTIONS: tuple[Option, ...] = (
    Option("mode", "Question set: lite (2 questions, 3 messages), full (100 questions, 5 conversations) or complete (400 questions, all 20 conversations of the 100K split).", "lite", choices=MODES, question_set=True),
    Option("tier", "BEAM tier: 100K, 500K (35 conversations), 1M (35) or 10M (10); full and complete are the tier's chosen and whole sets, lite is 100K's only.", "100K", choices=TIERS),
    Option("data", "BEAM data directory in the upstream layout (e.g. ../shared/beam); unset: Hugging Face at the pinned revision.", None, path=True, empty_means_unset=True),
    Option("neo4j", "Neo4j provider: auto, docker, local, or a bolt:// URI of an existing server.", "auto", _neo4j_spec),
    Option("base_url", "OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (Ollama) or https://api.openai.com/v1.", None, env=("OPENAI_BASE_URL",)),
    Option("api_key", "API key: environment only (BEAM_API_KEY or OPENAI_API_KEY); no flag and no ini key.", None, env=("OPENAI_API_KEY",), flag=False),
    Option("model", "Model of the agent; the default for every other role.", None, recorded=True),
    Option("extraction_model", "Model for ingest extraction (default: the agent's).", None, recorded=True),
    Option("resolution_model", "Model for entity resolution and updates (default: the agent's).", None, recorded=True),
    Option("judge_model", "Model of the judge (default: the agent's, which biases scores upward).", None, recorded=True),
    Option("embeddings", "Embeddings: local (in-process MiniLM, MatMuls in int8, built once into ~/.cache/pytest-beam), local-export (the wheel's export as shipped) or endpoint:<model>.", "local", _embeddings_spec, recorded=True),
    Option("chunk_tokens", "Ingest chunk size in tokens.", 1000, int, check=at_least(1), recorded=True),
    Option("max_llm_pairs", "Most entity pairs per label sent to the model for resolution.", 500, int, check=at_least(0), recorded=True),
    Option("concurrency", "Most model requests in flight per endpoint and process: the ceiling; fewer while the endpoint answers 429 or times out.", 4, int, check=at_least(1)),
    Option("question_concurrency", "Most questions of one conversation answered and judged at once, once it is ingested (a system that cannot answer concurrently answers one at a time).", 4, int, check=at_least(1)),
    Option("timeout", "Seconds before one model request times out.", 120.0, float, check=seconds),
    Option("max_retries", "Retries of a model request on timeouts, 5xx, and 429 once --beam-throttle-wait is spent (0: none at all).", 5, int, check=at_least(0)),
    Option("throttle_wait", "Seconds a model request may keep waiting on an endpoint that answers 429 (too many requests) before such answers count as failures.", 600.0, float, check=seconds),
    Option("max_calls", "Spend cap: most model calls in the run (lite default 40; full and complete: set it).", None, _optional_int, check=at_least(0)),
    Option("max_tokens", "Spend cap: most tokens in the run (lite default 120000; full and complete: set it).", None, _optional_int, check=at_least(0)),
    Option("dry_run", "Print the estimate of calls and tokens by phase, then exit without calling a model.", False, _bool, is_bool=True),
    Option("record_mode", "Cassette mode: off, none (replay only), once, new_episodes, all.", "off", choices=RECORD_MODES),
    Option("cassette", "Cassette file for --beam-record-mode.", None, path=True),
    Option("cache", "Response cache directory ('off' disables).", ".beam/cache", path=True),
    Option("results", "Directory for run records and traces.", ".beam/results", path=True),
    Option("pass_score", "A question passes at or above this score.", 0.5, float, check=between(0, 1), recorded=True),
    Option("scorer", f"Scoring profile: {profile_choices()}.", DEFAULT_PROFILE, choices=PROFILE_NAMES, recorded=True),
    Option("snapshot", "Answer snapshots: assert (fail on change), report (list changes), off. Default: assert when replaying a cassette, else report.", None, choices=SNAPSHOT_MODES),
    Option("agent_steps", "Most agent steps per question.", 12, int, check=at_least(1), recorded=True),
    Option("agent_timeout", "Seconds per question for the agent.", 300.0, float, check=seconds),
    Option("tool_mode", "Agent tool calls: auto, native, or json (JSON actions for models without tools).", "auto", choices=TOOL_MODES, recorded=True),
    Option("neo4j_start_timeout", "Seconds to wait for a Neo4j service to accept Bolt connections.", 180.0, float, check=seconds),
    Option("html", "Also write the HTML report beside the record.", False, _bool, is_bool=True),
    Option("conversations", "Only these conversations of the full or complete set, e.g. 1,4,17 (1 to 20 on 100K, 1 to 35 on 500K and 1M, 1 to 10 on 10M).", None, _conversation_list, question_set=True),
    Option("keep_markers", "Keep the BEAM generator's plan markers ('->-> 1,4' ending a turn) in the chat; by default they are stripped before any memory system sees it.", False, _bool, is_bool=True, question_set=True),
    Option("judge_runs", "Judge every rubric item and every event-ordering alignment this many times (each repeat its own cached calls); the record keeps the mean and the agreement between repeats.", 1, int, check=at_least(1), recorded=True),
    Option("judge_check", "Calibrate the judge on BEAM's reference answers of the run's own questions and show it in the summary: off, on (a sample of 24 cases), all, a number of cases, or auto (on when the judge is the embedded model).", "auto", _judge_check_spec, recorded=True),
    Option("judge_bar", "Cohen's kappa under which the judge check warns that the judge is not to be trusted.", DEFAULT_BAR, float, check=between(-1, 1, 'a kappa is')),
    Option("judge_fail_bar", "Share of right answers (BEAM's reference answers on their own rubric items, 'I don't know' to an abstention question) the judge may fail before the judge check warns that it is not to be trusted.", DEFAULT_FAIL_BAR, float, check=between(0, 1, 'a share is')),
    Option("label", "A name for this run, shown in the record, the summary and the report.", None),
    Option("system", f"Memory systems to compare, comma-separated: {system_choices()}; 'all' (every one but the outside systems), 'installed' (every one whose library is installed: a leaderboard), or a name a conftest declares with pytest_beam_system_names.", DEFAULT_SYSTEM),
    Option("context_tokens", "Token budget of the baselines' prompt (long-context keeps the newest messages that fit).", 120_000, int, check=at_least(1)),
    Option("retrieval_k", "Messages the bm25 and dense baselines retrieve per question.", 10, int, check=at_least(1)),
    Option("shard", "This machine's share of the run, K/N: the K-th of N shards of the selected conversations, balanced by chunk count; `pytest-beam merge` joins the shards' records into one.", None, _shard_spec),
)
OPTION_BY_NAME = {o.name: o for o in OPTIONS}


@dataclass(frozen=True)
class Settings:
    mode: Mode  # MODES
    data: Path | None
    neo4j: str
    base_url: str | None
    api_key: str | None
    model: str | None
    extraction_model: str | None
    resolution_model: str | None
    judge_model: str | None
    embeddings: str
    chunk_tokens: int
    max_llm_pairs: int
    concurrency: int
    timeout: float
    max_retries: int
    throttle_wait: float
    max_calls: int | None
    max_tokens: int | None
    dry_run: bool
    record_mode: str
    cassette: Path | None
    cache: Path | None
    results: Path
    pass_score: float
    scorer: ProfileName  # PROFILE_NAMES
    snapshot: str
    agent_steps: int
    agent_timeout: float
    tool_mode: Literal["auto", "native", "json"]  # TOOL_MODES
    neo4j_start_timeout: float
    html: bool
    conversations: str | None = None
    keep_markers: bool = False
    judge_runs: int = 1
    judge_check: str = "auto"
    judge_bar: float = DEFAULT_BAR
    judge_fail_bar: float = DEFAULT_FAIL_BAR
    label: str | None = None
    system: str = DEFAULT_SYSTEM
    context_tokens: int = 120_000
    retrieval_k: int = 10
    question_concurrency: int = 4
    shard: str | None = None
    tier: str = "100K"
    endpoint_identity: str | None = None  # not an option: set with the embedded model (llm.embedded.CACHE_IDENTITY)

    def __repr__(self) -> str:  # the key never shows, whatever prints settings
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        shown["api_key"] = "***" if self.api_key else None
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    @property
    def replaying(self) -> bool:
        return self.record_mode == "none"

    def cassette_file(self) -> Path:
        """The cassette a recording or replaying run uses (resolve refuses a record mode without one)."""
        if self.cassette is None:
            raise SettingsError(f"--beam-record-mode={self.record_mode} needs --beam-cassette FILE")
        return self.cassette

    @property
    def model_configured(self) -> bool:
        """Whether benchmark items can run: a model and an endpoint, or a cassette to replay."""
        return bool(self.model) and (bool(self.base_url) or self.replaying)

    def role_models(self) -> dict[str, str | None]:
        return {
            "agent": self.model,
            "extraction": self.extraction_model or self.model,
            "resolution": self.resolution_model or self.model,
            "judge": self.judge_model or self.model,
        }

    def public_dict(self) -> SettingsSnapshot:
        """Settings for the record: JSON-able, never the key."""
        out: SettingsSnapshot = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "api_key":
                value = bool(value)
                out["api_key_set"] = value
                continue
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out


#: A setting's value as a record keeps it (a path as its text), and a run's settings by name as
#: its record keeps them (:meth:`Settings.public_dict`): a key for every option of the table above
#: (and ``api_key_set``), so the keys are as open as the table is.
SettingValue: TypeAlias = str | int | float | bool | None
SettingsSnapshot: TypeAlias = dict[str, SettingValue]

PATH_OPTIONS = tuple(o.name for o in OPTIONS if o.path)
# Settings that shape a run's model requests or its scores: written into a cassette's header when
# recording, and taken from it when replaying unless a flag on the command line says otherwise
# (the keys of llm.cassette.RecordedSettings, the header's type).
RECORDED_SETTINGS = tuple(o.name for o in OPTIONS if o.recorded)


def recorded_settings(settings: Settings) -> RecordedSettings:
    """The cassette header's settings of a run (JSON-able)."""
    return cast("RecordedSettings", {name: getattr(settings, name) for name in RECORDED_SETTINGS})


# The question set a run asks (its requests are those of these questions): written into a cassette's
# header beside the settings, and compared on a miss, but never taken from it (flags choose the set).
QUESTION_SET = tuple(o.name for o in OPTIONS if o.question_set)


def question_set(settings: Settings) -> QuestionSet:
    """The cassette header's question set of a run (JSON-able); the tier only when it is not 100K,
    so the headers of cassettes recorded before the larger tiers still read the same."""
    tier = {"tier": settings.tier} if settings.tier != "100K" else {}
    return cast("QuestionSet", {**{name: getattr(settings, name) for name in QUESTION_SET}, **tier})


class FlagArguments(TypedDict, total=False):
    """The keyword arguments of argparse's ``add_argument`` (and pytest's ``addoption``) for an option."""

    help: str
    action: str
    metavar: str
    choices: tuple[str, ...]


def flag_arguments(option: Option) -> FlagArguments:
    """How an option is offered on a command line (pytest's options and the `pytest-beam` command's
    alike): its help, and a switch for a yes/no option, a metavar and the choices for the others."""
    if option.is_bool:
        return {"action": "store_true", "help": option.help}
    kwargs: FlagArguments = {"metavar": option.name.upper(), "help": option.help}
    if option.choices:
        kwargs["choices"] = option.choices
    return kwargs

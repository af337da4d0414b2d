"""One frozen settings object from `--beam-*` flags, `beam_*` ini keys and `BEAM_*` variables.

Precedence: flag, then environment variable, then ini key, then the default. The option table
below is the single source for all three spellings, the help text and the README's table.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from .scoring.judge_bars import DEFAULT_BAR, DEFAULT_FAIL_BAR
from .scoring.names import DEFAULT_PROFILE, PROFILE_NAMES
from .systems import DEFAULT_SYSTEM

if TYPE_CHECKING:
    from .data.sets import Mode
    from .llm.cassette import QuestionSet, RecordedSettings
    from .scoring.names import ProfileName

MODES = ("lite", "full", "complete")
TIERS = ("100K", "500K", "1M", "10M")  # pytest_beam.data.ids.TIERS (this module imports no other room)
RECORD_MODES = ("off", "none", "once", "new_episodes", "all")
SNAPSHOT_MODES = ("assert", "report", "off")
TOOL_MODES = ("auto", "native", "json")


class SettingsError(Exception):
    """A setting has a value the harness cannot use; the message names the flag and the fix."""


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
    from .data.errors import BeamDataError
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


EMBEDDERS = ("local", "local-export")


def _embeddings_spec(value: str) -> str:
    spec = str(value).strip()
    if spec in EMBEDDERS or (spec.startswith("endpoint:") and spec[len("endpoint:"):].strip()):
        return spec
    raise ValueError(f"choose one of {', '.join(EMBEDDERS)} or endpoint:<model>")


OPTIONS: tuple[Option, ...] = (
    Option("mode", "Question set: lite (2 questions, 3 messages), full (100 questions, 5 conversations) or complete (400 questions, all 20 conversations of the 100K split).", "lite", choices=MODES),
    Option("tier", "BEAM tier: 100K, 500K (35 conversations), 1M (35) or 10M (10); full and complete are the tier's chosen and whole sets, lite is 100K's only.", "100K", choices=TIERS),
    Option("data", "BEAM data directory in the upstream layout (e.g. ../shared/beam); unset: Hugging Face at the pinned revision.", None),
    Option("neo4j", "Neo4j provider: auto, docker, local, or a bolt:// URI of an existing server.", "auto", _neo4j_spec),
    Option("base_url", "OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (Ollama) or https://api.openai.com/v1.", None, env=("OPENAI_BASE_URL",)),
    Option("api_key", "API key: environment only (BEAM_API_KEY or OPENAI_API_KEY); no flag and no ini key.", None, env=("OPENAI_API_KEY",), flag=False),
    Option("model", "Model of the agent; the default for every other role.", None),
    Option("extraction_model", "Model for ingest extraction (default: the agent's).", None),
    Option("resolution_model", "Model for entity resolution and updates (default: the agent's).", None),
    Option("judge_model", "Model of the judge (default: the agent's, which biases scores upward).", None),
    Option("embeddings", "Embeddings: local (in-process MiniLM, MatMuls in int8, built once into ~/.cache/pytest-beam), local-export (the wheel's export as shipped) or endpoint:<model>.", "local", _embeddings_spec),
    Option("chunk_tokens", "Ingest chunk size in tokens.", 1000, int),
    Option("max_llm_pairs", "Most entity pairs per label sent to the model for resolution.", 500, int),
    Option("concurrency", "Most model requests in flight per endpoint.", 4, int),
    Option("timeout", "Seconds before one model request times out.", 120.0, float),
    Option("max_retries", "Retries of a model request on timeouts, 429 and 5xx.", 5, int),
    Option("max_calls", "Spend cap: most model calls in the run (lite default 40; full and complete: set it).", None, _optional_int),
    Option("max_tokens", "Spend cap: most tokens in the run (lite default 120000; full and complete: set it).", None, _optional_int),
    Option("dry_run", "Print the estimate of calls and tokens by phase, then exit without calling a model.", False, _bool, is_bool=True),
    Option("record_mode", "Cassette mode: off, none (replay only), once, new_episodes, all.", "off", choices=RECORD_MODES),
    Option("cassette", "Cassette file for --beam-record-mode.", None),
    Option("cache", "Response cache directory ('off' disables).", ".beam/cache"),
    Option("results", "Directory for run records and traces.", ".beam/results"),
    Option("pass_score", "A question passes at or above this score.", 0.5, float),
    Option("scorer", "Scoring profile: default (fixed), upstream (BEAM code's quirks, for BEAM's published numbers) or omnimemeval (0.5 kept, question filled in, event ordering as tau-b x coverage, as OmniMemEval scores).", DEFAULT_PROFILE, choices=PROFILE_NAMES),
    Option("snapshot", "Answer snapshots: assert (fail on change), report (list changes), off. Default: assert when replaying a cassette, else report.", None, choices=SNAPSHOT_MODES),
    Option("agent_steps", "Most agent steps per question.", 12, int),
    Option("agent_timeout", "Seconds per question for the agent.", 300.0, float),
    Option("tool_mode", "Agent tool calls: auto, native, or json (JSON actions for models without tools).", "auto", choices=TOOL_MODES),
    Option("neo4j_start_timeout", "Seconds to wait for a Neo4j service to accept Bolt connections.", 180.0, float),
    Option("html", "Also write the HTML report beside the record.", False, _bool, is_bool=True),
    Option("conversations", "Only these conversations of the full or complete set, e.g. 1,4,17 (1 to 20 on 100K, 1 to 35 on 500K and 1M, 1 to 10 on 10M).", None, _conversation_list),
    Option("keep_markers", "Keep the BEAM generator's plan markers ('->-> 1,4' ending a turn) in the chat; by default they are stripped before any memory system sees it.", False, _bool, is_bool=True),
    Option("judge_runs", "Judge every rubric item and every event-ordering alignment this many times (each repeat its own cached calls); the record keeps the mean and the agreement between repeats.", 1, int),
    Option("judge_check", "Calibrate the judge on BEAM's reference answers of the run's own questions and show it in the summary: off, on (a sample of 24 cases), all, a number of cases, or auto (on when the judge is the embedded model).", "auto", _judge_check_spec),
    Option("judge_bar", "Cohen's kappa under which the judge check warns that the judge is not to be trusted.", DEFAULT_BAR, float),
    Option("judge_fail_bar", "Share of right answers (BEAM's reference answers on their own rubric items, 'I don't know' to an abstention question) the judge may fail before the judge check warns that it is not to be trusted.", DEFAULT_FAIL_BAR, float),
    Option("label", "A name for this run, shown in the record, the summary and the report.", None),
    Option("system", "Memory systems to compare, comma-separated: graphrag, long-context, bm25, dense, gold-evidence (a measurement aid), the outside ones (mem0, graphiti, hindsight, cognee, lightrag, neo4j-graphrag, langmem; each needs its library installed), 'all' (the built-in ones), 'installed' (every system whose library is installed: a leaderboard), or a name a conftest declares with pytest_beam_system_names.", DEFAULT_SYSTEM),
    Option("context_tokens", "Token budget of the baselines' prompt (long-context keeps the newest messages that fit).", 120_000, int),
    Option("retrieval_k", "Messages the bm25 and dense baselines retrieve per question.", 10, int),
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

PATH_OPTIONS = ("data", "cassette", "cache", "results")
# Settings that shape a run's model requests or its scores: written into a cassette's header when
# recording, and taken from it when replaying unless a flag on the command line says otherwise
# (the keys of llm.cassette.RecordedSettings, the header's type).
RECORDED_SETTINGS = ("model", "extraction_model", "resolution_model", "judge_model", "embeddings",
                     "chunk_tokens", "max_llm_pairs", "agent_steps", "tool_mode", "scorer", "judge_runs",
                     "pass_score", "judge_check")


def recorded_settings(settings: Settings) -> RecordedSettings:
    """The cassette header's settings of a run (JSON-able)."""
    return cast("RecordedSettings", {name: getattr(settings, name) for name in RECORDED_SETTINGS})


# The question set a run asks (its requests are those of these questions): written into a cassette's
# header beside the settings, and compared on a miss, but never taken from it (flags choose the set).
QUESTION_SET = ("mode", "conversations", "keep_markers")


def question_set(settings: Settings) -> QuestionSet:
    """The cassette header's question set of a run (JSON-able); the tier only when it is not 100K,
    so the headers of cassettes recorded before the larger tiers still read the same."""
    tier = {"tier": settings.tier} if settings.tier != "100K" else {}
    return cast("QuestionSet", {**{name: getattr(settings, name) for name in QUESTION_SET}, **tier})
EMPTY_MEANS_UNSET = ("data",)  # an empty flag or variable says "none", above an ini file's value


def _check_tier(values: dict[str, Any], origins: dict[str, tuple[str, Any]]) -> None:
    """The settings that depend on the tier: lite is 100K's set, and a conversation list is checked
    against the tier's conversations (normalised to "1,4,17")."""
    from .data.errors import BeamDataError
    from .data.sets import parse_conversations

    tier = values["tier"]
    if values["mode"] == "lite" and tier != "100K":
        where = origins["tier"][0]
        raise SettingsError(f"{where}={tier}: the lite set is 100K's (conversation 17, two questions); with "
                            f"--beam-tier={tier} choose --beam-mode=full or --beam-mode=complete")
    if values["conversations"] is not None:
        try:
            values["conversations"] = ",".join(parse_conversations(values["conversations"], tier=tier) or ())
        except BeamDataError as exc:
            where, raw = origins["conversations"]
            raise SettingsError(f"{where}={raw!r}: {exc}") from exc


def _blank(value: Any) -> bool:
    return isinstance(value, str) and not value.strip()


def resolve(get_flag: Callable[[str], Any], get_ini: Callable[[str], Any],
            environ: Mapping[str, str] | None = None, rootdir: Path | None = None,
            invocation_dir: Path | None = None, ini_dir: Path | None = None,
            recorded: Mapping[str, Any] | None = None) -> Settings:
    """Build Settings; `get_flag(name)` and `get_ini(name)` return None when unset.

    `recorded`: a replayed cassette's settings (its header); each one is used unless a flag
    gives that setting (above the environment and the ini file, which were not made for it).

    A relative path resolves where it was written (pytest's convention): a flag's or an
    environment variable's against `invocation_dir`, an ini key's against `ini_dir` (the ini
    file's folder), a default against `rootdir`; each falls back to `rootdir`, then the cwd.
    """
    environ = os.environ if environ is None else environ
    root = rootdir or Path.cwd()
    bases = {"flag": invocation_dir or root, "env": invocation_dir or root, "ini": ini_dir or root, "default": root}
    base_of: dict[str, Path] = {}
    origins: dict[str, tuple[str, Any]] = {}  # option -> (where it was given, its raw value)
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw, origin = None, None
        flag_value = get_flag(option.name) if option.flag else None
        kind = "default"
        if option.name in EMPTY_MEANS_UNSET and _blank(flag_value):
            raw, kind = None, "flag"  # `--beam-data=`: unset, not the rootdir
        elif option.name in EMPTY_MEANS_UNSET and flag_value is None and any(_blank(environ.get(e)) for e in option.env_names):
            raw, kind = None, "env"  # `BEAM_DATA=`: unset, whatever the ini file says
        elif flag_value is not None and flag_value is not False:
            raw, origin, kind = flag_value, option.flag_name, "flag"
        else:
            for env_name in option.env_names:
                if environ.get(env_name):
                    raw, origin, kind = environ[env_name], env_name, "env"
                    break
            else:
                ini_value = None if option.env_only else get_ini(option.name)
                if ini_value not in (None, ""):
                    raw, origin, kind = ini_value, option.ini_name, "ini"
        if recorded is not None and option.name in recorded and kind != "flag":
            raw, origin, kind = recorded[option.name], f"the cassette's {option.flag_name}", "default"
        base_of[option.name] = bases[kind]
        origins[option.name] = (origin or option.flag_name, raw)
        if raw is None:
            values[option.name] = option.default
            continue
        try:
            value = raw if isinstance(raw, (bool, int, float)) and not isinstance(raw, str) else option.kind(raw)
        except (TypeError, ValueError) as exc:
            raise SettingsError(f"{origin}={raw!r}: {exc}") from exc
        if option.choices and value not in option.choices:
            raise SettingsError(f"{origin}={raw!r}: choose one of {', '.join(option.choices)}")
        values[option.name] = value

    for name in ("data", "cassette"):
        if values[name] is not None:
            values[name] = (base_of[name] / Path(values[name]).expanduser()).resolve()
    cache = values["cache"]
    values["cache"] = None if str(cache).lower() in {"off", "none", ""} else (
        base_of["cache"] / Path(cache).expanduser()).resolve()
    values["results"] = (base_of["results"] / Path(values["results"]).expanduser()).resolve()
    if values["snapshot"] is None:
        values["snapshot"] = "assert" if values["record_mode"] == "none" else "report"
    if values["record_mode"] not in ("off",) and values["cassette"] is None:
        raise SettingsError(f"--beam-record-mode={values['record_mode']} needs --beam-cassette FILE")
    if not 0.0 <= values["pass_score"] <= 1.0:
        raise SettingsError(f"--beam-pass-score={values['pass_score']}: must be between 0 and 1")
    if not -1.0 <= values["judge_bar"] <= 1.0:
        raise SettingsError(f"--beam-judge-bar={values['judge_bar']}: a kappa is between -1 and 1")
    if not 0.0 <= values["judge_fail_bar"] <= 1.0:
        raise SettingsError(f"--beam-judge-fail-bar={values['judge_fail_bar']}: a share is between 0 and 1")
    for name in ("chunk_tokens", "concurrency", "agent_steps", "judge_runs", "context_tokens", "retrieval_k"):
        if values[name] < 1:
            raise SettingsError(f"{OPTION_BY_NAME[name].flag_name}={values[name]}: must be at least 1")
    for name in ("max_calls", "max_tokens", "max_retries", "max_llm_pairs"):
        if values[name] is not None and values[name] < 0:
            raise SettingsError(f"{OPTION_BY_NAME[name].flag_name}={values[name]}: must be 0 or more")
    for name in ("timeout", "agent_timeout", "neo4j_start_timeout"):
        if not values[name] > 0:
            raise SettingsError(f"{OPTION_BY_NAME[name].flag_name}={values[name]}: must be more than 0 seconds")
    _check_tier(values, origins)
    if values["mode"] == "lite":
        values["max_calls"] = 40 if values["max_calls"] is None else values["max_calls"]
        values["max_tokens"] = 120_000 if values["max_tokens"] is None else values["max_tokens"]
    return Settings(**values)

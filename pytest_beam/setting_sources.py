"""Where each setting's value comes from, and the checks across settings: `resolve` builds the run's `Settings`.

Precedence: flag, then environment variable, then ini key, then the default; a replayed
cassette's header stands in for the environment, the ini file and the default of what it
records. Each option's own checks are in its row of `settings.OPTIONS`; nothing here names an
option but those whose meaning depends on another (the tier's sets, a record mode's cassette,
the lite set's caps).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeAlias

from .settings import OPTIONS, Settings, SettingsError

__all__ = ["resolve"]

#: Each option's value by name, as read, on its way into ``Settings(**values)``: one entry per row of
#: ``settings.OPTIONS``, each of its own type (the table is the schema, and ``Settings`` checks the
#: whole), so open here by nature of the table.
OptionValues: TypeAlias = dict[str, Any]


def _check_tier(values: OptionValues, origins: dict[str, tuple[str, Any]]) -> None:
    """The settings that depend on the tier: lite is 100K's set, and a conversation list is checked
    against the tier's conversations (normalised to "1,4,17")."""
    from .data.data_error import BeamDataError
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
    values: OptionValues = {}
    for option in OPTIONS:
        raw, origin = None, None
        flag_value = get_flag(option.name) if option.flag else None
        kind = "default"
        if option.empty_means_unset and _blank(flag_value):
            raw, kind = None, "flag"  # `--beam-data=`: unset, not the rootdir
        elif option.empty_means_unset and flag_value is None and any(_blank(environ.get(e)) for e in option.env_names):
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

    for option in OPTIONS:  # a path resolves where it was written; the cache may be off
        value = values[option.name]
        if not option.path or value is None:
            continue
        if option.name == "cache" and str(value).lower() in {"off", "none", ""}:
            values["cache"] = None
        else:
            values[option.name] = (base_of[option.name] / Path(value).expanduser()).resolve()
    if values["snapshot"] is None:
        values["snapshot"] = "assert" if values["record_mode"] == "none" else "report"
    if values["record_mode"] not in ("off",) and values["cassette"] is None:
        raise SettingsError(f"--beam-record-mode={values['record_mode']} needs --beam-cassette FILE")
    for option in OPTIONS:
        problem = option.check(values[option.name]) if option.check and values[option.name] is not None else None
        if problem:
            raise SettingsError(f"{option.flag_name}={values[option.name]}: {problem}")
    _check_tier(values, origins)
    if values["mode"] == "lite":
        values["max_calls"] = 40 if values["max_calls"] is None else values["max_calls"]
        values["max_tokens"] = 120_000 if values["max_tokens"] is None else values["max_tokens"]
    return Settings(**values)

"""Whether this pytest run benchmarks at all, and the `RunPlan` it does it with (the session starts from it).

Installing the plugin must not add tests to other projects: the suite is on with a beam flag on
the command line, or with `beam_mode` in the ini file / BEAM_MODE and no explicit test paths.
A benchmark run with no test paths collects the questions only: `testpaths` and the current
folder are left out, so a project's own tests never mix into a benchmark's record or XML (this
repo's ini has both `testpaths` and `beam_mode`). With paths, the questions join them only when
a suite flag asks (`--beam`, `--beam-mode`, `--beam-data`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from ..run_id import new_run_id
from ..setting_sources import resolve
from ..settings import (
    OPTION_BY_NAME,
    Settings,
    SettingsError,
    question_set,
    recorded_settings,
)
from .plan import RunPlan
from .project import spaced_value_problem

if TYPE_CHECKING:
    from ..llm.cassette import RecordedSettings

# Flags that, given on the command line, ask for the BEAM suite.
SUITE_FLAGS = ("--beam", "--beam-mode", "--beam-data")


def given_flag(args: list[str], flag: str) -> bool:
    """Whether `flag` is on the command line, as `--flag`, `--flag value` or `--flag=value`;
    whole names only (`--beam-model` is not `--beam-mode`)."""
    return any(a == flag or a.startswith(flag + "=") for a in args)


def _explicit_beam_flag(config: pytest.Config) -> bool:
    args = [str(a) for a in config.invocation_params.args]
    return any(given_flag(args, flag) for flag in SUITE_FLAGS)


def suite_wanted(config: pytest.Config, get_ini: Callable[[str], object]) -> bool:
    """Opt-in: a beam flag on the command line, or beam_mode in the ini file / BEAM_MODE;
    and with explicit test paths only when a beam flag says so."""
    if _explicit_beam_flag(config) or config.getoption("beam_collect", False):
        return True
    mode_configured = bool(get_ini("mode") or os.environ.get("BEAM_MODE"))
    explicit_paths = config.args_source == pytest.Config.ArgsSource.ARGS
    return mode_configured and not explicit_paths


def plan_run(config: pytest.Config) -> RunPlan | None:
    """The run's plan (settings errors raise SettingsError); None when the suite is off."""
    problem = spaced_value_problem(config)
    if problem is not None:
        raise SettingsError(problem)

    def get_ini(name: str) -> object:
        return config.getini("beam_" + name)

    root, ini_dir = config.rootpath, (config.inipath.parent if config.inipath else None)

    def settle(recorded: RecordedSettings | None = None) -> Settings:
        return resolve(
            get_flag=lambda name: config.getoption("beam_" + name, None) if OPTION_BY_NAME[name].flag else None,
            get_ini=get_ini, rootdir=root, invocation_dir=config.invocation_params.dir, ini_dir=ini_dir,
            recorded=recorded)

    settings = settle()
    if settings.replaying and settings.cassette is not None:
        from ..llm.cassette import read_settings

        recorded = read_settings(settings.cassette)
        if recorded is not None:  # replay as recorded, unless a flag says otherwise
            settings = settle(recorded)
    if not suite_wanted(config, get_ini):
        return None
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = []  # no paths given: the benchmark alone, not testpaths or the folder
    from .endpoint import WORKERINPUT_KEY, apply, check_settings

    check_settings(settings)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get(WORKERINPUT_KEY):
        settings = apply(settings, workerinput[WORKERINPUT_KEY])  # the controller's embedded model
    if workerinput is not None:
        if workerinput.get("beam_loadgroup"):
            config.option.loadgroup = True  # xdist reads it on the worker to suffix nodeids with @group
        worker_id: str | None = workerinput["workerid"]
        run_id = workerinput.get("beam_run_id") or new_run_id()
    else:
        worker_id, run_id = None, new_run_id()
    if workerinput is None:
        if settings.dry_run and getattr(config.option, "numprocesses", None):
            config.option.dist, config.option.numprocesses = "no", None  # the estimate needs no workers
        _use_loadgroup(config)
    record_mode = "off"
    if settings.record_mode != "off":
        if workerinput is not None:
            record_mode = workerinput["beam_record_mode"]
        else:
            from ..llm import Cassette

            record_mode = Cassette.prepare(settings.cassette_file(), settings.record_mode,
                                           recorded_settings(settings), question_set(settings))
            if record_mode == "none":  # replaying: a cassette that holds nothing stops the run
                from ..llm.cassette import replay_problem

                problem = replay_problem(settings.cassette_file())
                if problem:
                    raise SettingsError(problem)
    return RunPlan(config=config, settings=settings, worker_id=worker_id, run_id=run_id,
                   run_dir=settings.results / run_id, record_mode=record_mode)


def _use_loadgroup(config: pytest.Config) -> None:
    """`-n N` alone means `--dist load` to xdist; a conversation must stay on one worker."""
    if not getattr(config.option, "numprocesses", None):
        return
    args = [str(a) for a in config.invocation_params.args]
    if any(a.startswith("--dist") or a == "-d" for a in args):
        return
    if getattr(config.option, "dist", "no") in ("no", "load"):
        config.option.dist = "loadgroup"

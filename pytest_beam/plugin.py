"""pytest hooks of pytest-beam, and nothing else: each hook hands over to a room of the package.

Kept light on purpose: this module is imported by every pytest run in an environment where the
plugin is installed, so heavy libraries (neo4j, openai, pyarrow, the embedder) load only inside
hooks that need them. When the suite is on, `pytest_configure` plans the run and registers its
plugin object (`pytest_beam.session.hooks`), which carries the hooks of a benchmarking run and
starts its BeamSession at session start.
"""

from __future__ import annotations

import pytest

from .settings import OPTIONS, SettingsError, flag_arguments

MARKERS = {
    "beam": "a BEAM probing question (collected by pytest-beam)",
    "lite": "one of the two questions of the lite set",
    "known_bad_rubric": "a BEAM question whose rubric is wrong; xfail, not strict",
}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("beam", "pytest-beam: the BEAM memory benchmark")
    secrets = " ".join(o.help for o in OPTIONS if o.env_only)
    for option in OPTIONS:
        if option.env_only:
            continue  # said in --beam-base-url's help: the key never sits in argv or an ini file
        extra = f" [ini {option.ini_name}; env {', '.join(option.env_names)}]"
        if option.name == "base_url":
            extra += f" {secrets}"
        kwargs = flag_arguments(option)
        group.addoption(option.flag_name, dest="beam_" + option.name, default=None, **{
            **kwargs, "help": kwargs["help"] + extra})
        parser.addini(option.ini_name, option.help, default=None)
    group.addoption("--beam", dest="beam_collect", action="store_true", default=False,
                    help="Collect the BEAM questions even when test paths are given.")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    from .data.records import ABILITIES

    for name, doc in {**MARKERS, **{a: f"BEAM ability {a}" for a in ABILITIES}}.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    # Answer snapshots are named by question id, not by syrupy's test-file convention (see
    # session/answer_snapshots.py); syrupy says so on every write, which is expected here.
    config.addinivalue_line("filterwarnings", "ignore:\\nCan not relate snapshot:UserWarning")
    from .session.configure import plan_run

    try:
        plan = plan_run(config)
    except SettingsError as exc:
        raise pytest.UsageError(f"pytest-beam: {exc}") from None
    if plan is not None:
        from .session.hooks import register

        register(plan)

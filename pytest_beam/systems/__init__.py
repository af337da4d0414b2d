"""The memory systems a run can compare, made by name from the registry (``pytest_beam.system_registry``).

    from pytest_beam.systems import make_system, system_names
    system = make_system("bm25", context)   # a MemorySystem whose .name is "bm25"

Each entry is a factory `(SystemContext) -> MemorySystem`, its module imported only when the
system is made, so `pytest --help` and collection pay for none of them. The dry run asks each
selected system for its estimate (`estimate_of`: the class's `MemorySystem.estimate`). `gold-evidence` is a
measurement aid (`is_measurement_aid`): the harness gives it the question's sources through
`SystemContext.gold_evidence`, and reports it apart as a ceiling, never ranked with the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import import_module
from typing import TYPE_CHECKING, Protocol

from ..system_registry import MEASUREMENT_AIDS, OUTSIDE_SYSTEMS, OWN_ENV_SYSTEMS, SYSTEMS, SystemEntry

if TYPE_CHECKING:
    from ..data.records import ProbingQuestion
    from ..data.sets import BenchmarkSet
    from ..settings import Settings
    from ..system import Estimate, MemorySystem, SystemContext

Factory = Callable[["SystemContext"], "MemorySystem"]


class SystemClass(Protocol):
    """A registered class: made from the conversation's context; says whether it is a measurement aid."""

    measurement_aid: bool

    def __call__(self, context: SystemContext) -> MemorySystem: ...

    def estimate(self, bench_set: BenchmarkSet, questions: list[ProbingQuestion],
                 settings: Settings) -> Estimate | None: ...


def missing_extra(name: str) -> str | None:
    """For an outside system whose library is not installed: the line saying how to install it."""
    if name not in OUTSIDE_SYSTEMS:
        return None
    if name in OWN_ENV_SYSTEMS:
        from .own_env import missing_env

        return missing_env(name)
    from importlib.util import find_spec

    module, extra = OUTSIDE_SYSTEMS[name]
    if find_spec(module) is not None:
        return None
    return f"--beam-system={name} needs its library: pip install 'pytest-beam[{extra}]'"


def installed_names() -> tuple[str, ...]:
    """Every registered system this machine can run: the built-in ones (baselines and the ceiling
    included) and each outside one whose library is installed (what `--beam-system=installed` means)."""
    return tuple(n for n in SYSTEMS if missing_extra(n) is None)


class UnknownSystem(ValueError):
    """A system name that is not in the registry."""


def system_names() -> tuple[str, ...]:
    return tuple(SYSTEMS)


def _check(name: str) -> SystemEntry:
    try:
        return SYSTEMS[name]
    except KeyError:
        raise UnknownSystem(f"unknown memory system {name!r}; valid names: {', '.join(SYSTEMS)}") from None


def system_class(name: str) -> SystemClass:
    entry = _check(name)
    cls: SystemClass = getattr(import_module(entry.module), entry.cls)
    return cls


def is_measurement_aid(name: str) -> bool:
    _check(name)
    return name in MEASUREMENT_AIDS


def estimate_of(name: str, bench_set: BenchmarkSet, questions: list[ProbingQuestion],
                settings: Settings) -> Estimate | None:
    """A system's dry-run estimate of its own calls on `questions`, as its class gives it; None for a
    system that cannot say (the outside ones) and for a name the registry does not hold (a conftest's)."""
    if name not in SYSTEMS:
        return None
    return system_class(name).estimate(bench_set, questions, settings)


def system_factory(name: str) -> Factory:
    """The factory of a registered system; raises UnknownSystem naming the valid ones."""
    _check(name)

    def make(context: SystemContext) -> MemorySystem:
        system = system_class(name)(context)
        # The built-in class keeps its historical name; in a comparison every system goes by its
        # registry name, so set it on the instance (the class is not touched).
        system.name = name
        return system

    return make


def make_system(name: str, context: SystemContext) -> MemorySystem:
    return system_factory(name)(context)


def parse_system_list(spec: str, extra: Iterable[str] = ()) -> list[str]:
    """`"graphrag, bm25,gold-evidence"` -> names in order, duplicates dropped, each checked;
    `extra` names are accepted too (systems from a conftest's `pytest_beam_make_system`)."""
    allowed = set(extra)
    names: list[str] = []
    for raw in spec.split(","):
        name = raw.strip()
        if name and name not in names:
            if name not in allowed:
                _check(name)
            names.append(name)
    if not names:
        raise UnknownSystem(f"no memory system named in {spec!r}; valid names: {', '.join(SYSTEMS)}")
    return names


__all__ = ["installed_names", "missing_extra", "Factory",
           "UnknownSystem", "estimate_of", "is_measurement_aid", "make_system", "parse_system_list", "system_class",
           "system_factory", "system_names"]

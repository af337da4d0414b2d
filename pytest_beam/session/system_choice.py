"""Which memory systems a run compares (`--beam-system`), and how an item names its system.

Each (system, question) pair is one item. Its id is `<system>-<question id>`
(`bm25-conv17:information_extraction:0`; the shape lives in `data/ids.py`), so `-k bm25` selects
one system, except when the selection is the default `graphrag` alone: then the id stays the bare question id, so the
snapshots, cassettes, known-bad lists and `-k` expressions written before systems could be
compared keep working. A conftest adds its own systems by naming them in
`pytest_beam_system_names` and building them in `pytest_beam_make_system` when
`context.system_name` is one of its names; they then take part under those names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

ALL = "all"
INSTALLED = "installed"  # every system whose library is installed: a leaderboard in one command


@dataclass(frozen=True)
class SystemRun:
    """The `beam_conversation` parameter: one system on one conversation (one instance, ingested once)."""

    system: str
    conversation_id: str
    tier: str = "100K"

    def __str__(self) -> str:
        from ..data.ids import conversation_label

        return f"{self.system}/{conversation_label(self.tier, self.conversation_id)}"


def custom_names(config: pytest.Config) -> list[str]:
    """Names that conftests and plugins declare through `pytest_beam_system_names`, in order."""
    names: list[str] = []
    for group in config.hook.pytest_beam_system_names():
        for name in group or ():
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*", name):
                raise ValueError(f"pytest_beam_system_names gave {name!r}: a system name is letters, digits, "
                                 f"'_', '.' and inner '-'")
            if name not in names:
                names.append(name)
    return names


def select_systems(spec: str, custom: list[str]) -> list[str]:
    """`--beam-system` as a list of names; `all` is every built-in system (the outside ones need their
    extras and are named one by one), `installed` every system this machine can run (the built-in
    ones and each outside one whose library is installed), each then followed by the custom ones.

    Raises `UnknownSystem` naming the known names (registered and declared) for a name that is neither.
    """
    from ..system_registry import builtin_names
    from ..systems import UnknownSystem, installed_names, parse_system_list, system_names

    known = [*system_names(), *(c for c in custom if c not in system_names())]
    own = [c for c in custom if c not in system_names()]
    groups = {ALL: lambda: [*builtin_names(), *own], INSTALLED: lambda: [*installed_names(), *own]}
    expanded = spec
    if any(p.strip() in groups for p in spec.split(",")):
        expanded = ",".join(name for part in spec.split(",")
                            for name in (groups[part.strip()]() if part.strip() in groups else [part]))
    try:
        return parse_system_list(expanded, extra=custom)
    except UnknownSystem as exc:
        raise UnknownSystem(f"--beam-system={spec!r}: {exc}; known names: {', '.join(known)} "
                            f"(or '{ALL}', '{INSTALLED}')") from None


def bare_ids(systems: list[str]) -> bool:
    """The default selection alone keeps the historical bare question ids."""
    from ..system_registry import DEFAULT_SYSTEM

    return systems == [DEFAULT_SYSTEM]


def param_id(system: str, question_id: str, bare: bool) -> str:
    from ..data.ids import format_item_id, require_question_id

    return format_item_id(require_question_id(question_id), None if bare else system)


def split_param_id(param: str) -> tuple[str | None, str] | None:
    """`bm25-conv17:x:0` -> ("bm25", "conv17:x:0"); a bare id gives (None, id); None if not a question."""
    from ..data.ids import parse_item_id

    item = parse_item_id(param)
    return (item.system, str(item.question)) if item else None


def junit_classname(nodeid: str) -> str | None:
    """`beam.<ability>` for a question's item (`beam.<system>.<ability>` when systems are compared),
    so a CI dashboard that groups JUnit test cases by class groups them by ability; None otherwise."""
    from ..data.ids import item_id_of_nodeid

    item = item_id_of_nodeid(nodeid)
    if item is None:
        return None
    return ".".join(part for part in ("beam", item.system, item.question.ability) if part)


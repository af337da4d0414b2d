"""Every memory system pytest-beam ships, by name: the one table each list of system names comes from.

A leaf (no imports of ours), so the settings table can name the default and list the choices in
``--beam-system``'s help without loading a system, and ``systems/`` can make one by name. A new
system is a module with its class and one row here; an outside one (a library an extra installs)
also names its extra and the module that extra installs.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_SYSTEM", "MEASUREMENT_AIDS", "OUTSIDE_SYSTEMS", "OWN_ENV_SYSTEMS", "SYSTEMS", "SystemEntry",
           "builtin_names"]


@dataclass(frozen=True)
class SystemEntry:
    """Where a system's class lives, and what a user must know before choosing it."""

    module: str
    cls: str
    # A ceiling that reads the question's own sources: lent them, reported apart, never ranked
    # (a test checks it against the class's `measurement_aid`).
    measurement_aid: bool = False
    # An outside system: (the module its extra installs, the extra's name); `all` leaves it out.
    extra: tuple[str, str] | None = None
    # An outside system whose pins cannot live beside pytest-beam's (openai < 3): it runs in a venv
    # of its own, made by `pytest-beam install-system NAME` (systems/own_env.py), as a child process.
    own_env: bool = False


SYSTEMS: dict[str, SystemEntry] = {
    "graphrag": SystemEntry("pytest_beam.memory.graphrag", "GraphRAGSystem"),
    "long-context": SystemEntry("pytest_beam.systems.long_context", "LongContextSystem"),
    "bm25": SystemEntry("pytest_beam.systems.bm25", "BM25System"),
    "dense": SystemEntry("pytest_beam.systems.dense", "DenseSystem"),
    "gold-evidence": SystemEntry("pytest_beam.systems.gold_evidence", "GoldEvidenceCeiling", measurement_aid=True),
    # outside systems, each an extra: their libraries call models through the harness's relay
    "mem0": SystemEntry("pytest_beam.systems.mem0_system", "Mem0System", extra=("mem0", "mem0")),
    "graphiti": SystemEntry("pytest_beam.systems.graphiti_system", "GraphitiSystem",
                            extra=("graphiti_core", "graphiti")),
    "hindsight": SystemEntry("pytest_beam.systems.hindsight_system", "HindsightSystem",
                             extra=("hindsight_api", "hindsight"), own_env=True),
    "cognee": SystemEntry("pytest_beam.systems.cognee_system", "CogneeSystem", extra=("cognee", "cognee"),
                          own_env=True),
    "lightrag": SystemEntry("pytest_beam.systems.lightrag_system", "LightRAGSystem", extra=("lightrag", "lightrag")),
    "neo4j-graphrag": SystemEntry("pytest_beam.systems.neo4j_graphrag_system", "Neo4jGraphRAGSystem",
                                  extra=("neo4j_graphrag", "neo4j-graphrag")),
    "langmem": SystemEntry("pytest_beam.systems.langmem_system", "LangMemSystem", extra=("langmem", "langmem")),
}
DEFAULT_SYSTEM = "graphrag"
MEASUREMENT_AIDS: frozenset[str] = frozenset(name for name, e in SYSTEMS.items() if e.measurement_aid)
#: Outside systems: name -> (the module their extra installs, the extra).
OUTSIDE_SYSTEMS: dict[str, tuple[str, str]] = {name: e.extra for name, e in SYSTEMS.items() if e.extra is not None}
#: Outside systems that run in an environment of their own (own_env.py), not as an extra.
OWN_ENV_SYSTEMS: frozenset[str] = frozenset(name for name, e in SYSTEMS.items() if e.own_env)


def builtin_names() -> tuple[str, ...]:
    """The systems that ship with pytest-beam's own dependencies (what `--beam-system=all` means)."""
    return tuple(name for name, e in SYSTEMS.items() if e.extra is None)


def choices_text() -> str:
    """The systems as ``--beam-system``'s help lists them."""
    shown = [f"{name} (a measurement aid)" if e.measurement_aid else name for name, e in SYSTEMS.items()
             if e.extra is None]
    outside = [name for name, e in SYSTEMS.items() if e.extra is not None and not e.own_env]
    own = [name for name, e in SYSTEMS.items() if e.own_env]
    return (", ".join(shown) + f"; outside systems, each with its extra: {', '.join(outside)}; in an environment "
            f"of their own (pytest-beam install-system): {', '.join(own)}")

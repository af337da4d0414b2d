"""The registry: names to systems, lazily imported, with a clear error for an unknown name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_beam.memory.graphrag import GraphRAGSystem
from pytest_beam.system import MemorySystem
from pytest_beam.system_registry import MEASUREMENT_AIDS
from pytest_beam.systems import (
    UnknownSystem,
    make_system,
    parse_system_list,
    system_class,
    system_names,
)

NAMES = ("graphrag", "long-context", "bm25", "dense", "gold-evidence")
# need their extras (or their own environments) and the harness's relay (tests/e2e/test_outside_systems.py, ...)
OUTSIDE = ("mem0", "graphiti", "hindsight", "cognee", "lightrag", "neo4j-graphrag", "langmem")


def test_names_and_each_system_goes_by_its_registry_name(make_context):
    assert system_names() == NAMES + OUTSIDE
    context = make_context(gold_evidence=lambda qid: ())
    for name in NAMES:
        system = make_system(name, context)  # constructing starts nothing (start_neo4j fails the test)
        assert isinstance(system, MemorySystem) and system.name == name
    assert isinstance(make_system("graphrag", context), GraphRAGSystem)
    assert GraphRAGSystem.name == "agentic-graphrag-neo4j"  # the class itself is untouched


def test_an_unknown_name_lists_the_valid_ones(make_context):
    with pytest.raises(
        UnknownSystem, match="'bm52'; valid names: graphrag, long-context, bm25, dense, gold-evidence, mem0, graphiti"
    ):
        make_system("bm52", make_context())
    with pytest.raises(UnknownSystem, match="valid names"):
        parse_system_list("graphrag,nope")


def test_parse_a_system_list():
    assert parse_system_list(" graphrag, bm25 ,gold-evidence,bm25") == ["graphrag", "bm25", "gold-evidence"]
    assert parse_system_list("mine,bm25", extra=["mine"]) == ["mine", "bm25"]
    with pytest.raises(UnknownSystem, match="no memory system"):
        parse_system_list(" , ")


def test_measurement_aids_are_declared_by_their_classes():
    assert {n for n in NAMES if system_class(n).measurement_aid} == MEASUREMENT_AIDS == {"gold-evidence"}


def test_importing_the_registry_imports_no_system():
    code = ("import sys, pytest_beam.systems as s; s.system_names(); "
            "print(sorted(m for m in sys.modules"
            " if m.startswith(('pytest_beam.systems.', 'pytest_beam.memory', 'bm25s'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

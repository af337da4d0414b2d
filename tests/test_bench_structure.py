"""The benches under bench/ use the project's public names only, and every runnable bench has the
smoke mode that .ci/bench-smoke.sh runs (``--smoke``, ``--cache``). Read from the source with
ast, so nothing is imported or started to check it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.test_package_structure import every_import

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
SIBLINGS = {p.stem for p in BENCH.glob("*.py")}  # bench modules import each other by bare name


def trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(BENCH.glob("*.py"))}


def is_runnable(tree: ast.Module) -> bool:
    """The runner's rule (.ci/bench-smoke.sh): a module-level ``main`` or ``__main__`` guard."""
    return any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body) or any(
        isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def project_module(module: str) -> bool:
    top = module.split(".")[0]
    return top in ("pytest_beam", "tests") or top in SIBLINGS


def private_imports(path: Path, tree: ast.Module) -> list[str]:
    found = []
    for node in every_import(tree):
        if isinstance(node, ast.Import):
            targets = [(a.name, None) for a in node.names]
        else:
            targets = [(node.module or "", a.name) for a in node.names]
        for module, name in targets:
            if not project_module(module):
                continue
            if any(is_private(part) for part in module.split(".")):
                found.append(f"{path.name}:{node.lineno} imports the private module {module}")
            elif name and is_private(name):
                found.append(f"{path.name}:{node.lineno} imports the private name {name} from {module}")
    return found


def calls(tree: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               for n in ast.walk(tree))


def test_benches_import_public_names_only():
    found = [line for path, tree in trees().items() for line in private_imports(path, tree)]
    assert not found, "benches must use public names (export them from a public module):\n" + "\n".join(found)


def test_the_private_import_check_sees_both_forms():
    tree = ast.parse("from pytest_beam.services._process import pid_exists\n"
                     "def f():\n    from retrieval_neo4j import _load\n"
                     "import pytest_beam.__main__\nfrom numpy import _core\n")
    found = private_imports(Path("x.py"), tree)
    assert found == ["x.py:1 imports the private module pytest_beam.services._process",
                     "x.py:3 imports the private name _load from retrieval_neo4j"]


def test_every_runnable_bench_has_the_smoke_mode():
    runnable = {p.name: t for p, t in trees().items() if is_runnable(t)}
    assert {"retrieval.py", "neo4j_services.py", "embedded_model.py"} <= set(runnable)
    missing = [name for name, tree in runnable.items()
               if not (calls(tree, "add_smoke_options") and calls(tree, "use_cache"))]
    assert not missing, f"benches without --smoke/--cache (smoke_options.add_smoke_options, use_cache): {missing}"


def test_the_smoke_options_and_the_runner_agree():
    sys.path.insert(0, str(BENCH))
    try:
        import smoke_options
    finally:
        sys.path.remove(str(BENCH))
    import argparse

    parser = argparse.ArgumentParser()
    smoke_options.add_smoke_options(parser)
    args = parser.parse_args(["--smoke", "--cache", "/tmp/x"])
    assert args.smoke and args.cache == "/tmp/x"
    assert not parser.parse_args([]).smoke
    runner = (REPO / ".ci" / "bench-smoke.sh").read_text(encoding="utf-8")
    assert '--smoke --cache "$root/$name/cache"' in runner
    assert 'n.name == "main"' in runner and '"__main__" in ast.unparse(n.test)' in runner  # is_runnable's rule

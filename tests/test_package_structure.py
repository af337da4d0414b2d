"""The package's shape, held to ARCHITECTURE.md: its rooms table is read, and every import of every
module -- at run time, inside a function, or only for type checkers -- must go where the table
lets its room go, always down the table; no circle among the modules; no module importing
another's private names; no module over 400 lines; no two modules of one name. Read from the
source with ast, so nothing is imported to check it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_beam"
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def every_import(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import of a module: at module level, inside functions, under ``if TYPE_CHECKING``."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def package_graph() -> tuple[dict[str, set[str]], list[str]]:
    """module -> the package's modules it imports (every import), and the private names imported."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    private: list[str] = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in every_import(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [(a.name, None) for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base, a.name) for a in node.names]
            for target, imported in targets:
                if not target.startswith("pytest_beam"):
                    continue
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target != name:
                    graph[name].add(target)
                is_module = target.endswith("." + (imported or ""))
                if imported and imported.startswith("_") and not imported.startswith("__") and target != name \
                        and not is_module:
                    private.append(f"{name} imports {imported} from {target}")
    return graph, private


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            # a package's __init__ importing its own submodules is how packages are built, not a circle
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if not state.get(nxt):
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if not state.get(node):
            found = visit(node)
            if found:
                return found
    return None


# ---------------------------------------------------------------- ARCHITECTURE.md's rooms table

NOTHING = "nothing of ours"


def rooms_table(text: str) -> list[tuple[list[str], list[str]]]:
    """(the rooms a row names, the rooms it may touch), row by row, top to bottom, from the table
    under "## The rooms": each name in backticks, `name/` a package, `name.py` a module."""
    section = text.split("## The rooms", 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "room":
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        touch = [] if cells[2] == NOTHING else re.findall(r"`([^`]+)`", cells[2])
        assert names and (touch or cells[2] == NOTHING), f"a row the test cannot read: {line}"
        rows.append((names, touch))
    return rows


def room_module(name: str) -> str:
    """A room's name in the table as the package's dotted module."""
    if name == "__init__.py":
        return "pytest_beam"
    return "pytest_beam." + name.removesuffix("/").removesuffix(".py").replace("/", ".")


def room_of(module: str, rooms: list[str], packages: set[str]) -> str | None:
    """The room a module is in: its own, or the package room it is inside."""
    return next((room for room in sorted(rooms, key=len, reverse=True)
                 if module == room or (room in packages and module.startswith(room + "."))), None)


def packages_of(table: list[tuple[list[str], list[str]]]) -> set[str]:
    return {room_module(n) for names, _ in table for n in names if n.endswith("/")}


@pytest.fixture(scope="module")
def table() -> list[tuple[list[str], list[str]]]:
    return rooms_table((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"))


def test_the_rooms_table_is_read(table):
    rooms = [room_module(n) for names, _ in table for n in names]
    assert rooms[0] == "pytest_beam.plugin" and "pytest_beam.session" in rooms and "pytest_beam.llm" in rooms
    graph, _ = package_graph()
    assert "pytest_beam.session.plan" in graph["pytest_beam.session.configure"]
    assert "pytest_beam.session.state" in graph["pytest_beam.session.fixtures"]


def test_every_module_lives_in_one_room_of_the_table(table):
    rooms = [room_module(n) for names, _ in table for n in names]
    graph, _ = package_graph()
    assert len(rooms) == len(set(rooms)), "a room is named twice in the table"
    assert [m for m in graph if room_of(m, rooms, packages_of(table)) is None] == []
    assert [r for r in rooms if r not in graph] == []  # no room the package lacks


def test_a_room_may_touch_only_rooms_below_it_in_the_table(table):
    """The table reads top-down: no arrow back up, so no circle between rooms."""
    order: dict[str, int] = {}
    for n, (names, _) in enumerate(table):
        for name in names:
            order[room_module(name)] = n
    for n, (names, touch) in enumerate(table):
        for other in touch:
            assert room_module(other) in order, f"{names} may touch {other}, which the table has no row for"
            assert order[room_module(other)] > n, f"{names} may touch {other}, which is above it"


def test_every_import_goes_where_its_room_may_touch(table):
    """Type-only and function-level imports count: a reader cannot read one without the other."""
    allowed = {room_module(name): {room_module(t) for t in touch} for names, touch in table for name in names}
    graph, _ = package_graph()
    packages = packages_of(table)
    wrong = []
    for module, targets in graph.items():
        mine = room_of(module, list(allowed), packages)
        for target in targets:
            theirs = room_of(target, list(allowed), packages)
            if theirs != mine and theirs not in allowed[mine]:
                wrong.append(f"{module} -> {target} ({theirs} is not in {mine}'s 'may touch')")
    assert wrong == []


def test_no_import_circle_among_the_package_modules():
    graph, _ = package_graph()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_no_module_imports_another_modules_private_names():
    _, private = package_graph()
    assert private == []


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_two_modules_share_a_name():
    """A name says what a file holds, once: collection / collector / collect and three estimate.py
    made a reader open the wrong one."""
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_the_cycle_finder_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_table_reader_reads_a_row_and_the_rule_catches_an_upward_arrow():
    text = ("## The rooms\n\n| room | owns | may touch |\n|---|---|---|\n"
            "| `a.py` | x | `b/` |\n| `b/` | y | nothing of ours |\n")
    assert rooms_table(text) == [(["a.py"], ["b/"]), (["b/"], [])]
    rooms = ["pytest_beam", "pytest_beam.b", "pytest_beam.bc"]
    assert room_of("pytest_beam.b.c", rooms, {"pytest_beam.b"}) == "pytest_beam.b"
    assert room_of("pytest_beam.d", rooms, {"pytest_beam.b"}) is None  # the package's __init__ is a room of its own


def test_dict_str_any_only_names_a_shape_open_by_nature_said_so_where_defined():
    """`dict[str, Any]` stands only on the right of a module-level type alias whose comment, just
    above it, says why the shape is open; everywhere else a shape has its type (there were 103)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if "dict[str, Any]" not in line:
                continue
            alias = re.fullmatch(r"[A-Z]\w*: TypeAlias = dict\[str, Any\]", line)
            said = n > 0 and lines[n - 1].startswith("#") and "open" in " ".join(
                lines[k] for k in range(max(0, n - 5), n) if lines[k].startswith("#")).lower()
            if not (alias and said):
                found.append(f"{path.relative_to(ROOT)}:{n + 1}: {line.strip()}")
    assert found == []

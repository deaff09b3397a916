"""The layout of `solutions/` (issue 24): a small kit at the top, one meaning per module name, and
a package that reads bottom-up (no module imports, even lazily, one that imports it back)."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "solutions"
MODULES = {".".join(("solutions", *p.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__"): p
           for p in ROOT.rglob("*.py")}


def imports_of(path: pathlib.Path, name: str) -> set[str]:
    """Every `solutions` module this file imports, at the top or inside a function."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports_of(path, name) for name, path in MODULES.items()}


def test_the_top_level_holds_at_most_twenty_modules():
    top = sorted(p.stem for p in ROOT.glob("*.py") if p.stem != "__init__")
    assert len(top) <= 20, f"{len(top)} modules at the top of solutions/: {top}"


def test_no_module_stem_is_used_twice():
    stems: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if path.stem != "__init__":
            stems.setdefault(path.stem, []).append(name)
    twice = {s: n for s, n in stems.items() if len(n) > 1}
    assert not twice, f"one name, two modules: {twice}"


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in `graph` as a path [a, b, ..., a], or None (depth-first, three colours)."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            # importing a package's submodule runs the package's __init__ first, but that is not
            # an edge back unless __init__ itself imports the submodule's importer
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_in_solutions():
    assert cycle(GRAPH) is None, "import cycle: " + " -> ".join(cycle(GRAPH))


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    __import__(name)

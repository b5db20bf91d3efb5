"""The layers of docs/guide/development.md (Architecture): the library never imports the app layer, common/ no algorithm."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent.parent / "sb3_maxdiff"
APP = ("sb3_maxdiff.experiments", "sb3_maxdiff.zoo", "sb3_maxdiff.train", "sb3_maxdiff.enjoy", "sb3_maxdiff.record_video",
       "sb3_maxdiff.hub", "sb3_maxdiff.cli")  # fmt: skip
ALGORITHMS = ("sb3_maxdiff.nnmppi", "sb3_maxdiff.maxdiff", "sb3_maxdiff.envs", "sb3_maxdiff.wrappers")


def imported_modules(source: str, package: str) -> set[str]:
    """
    Every module that ``source``, a module of ``package``, imports, anywhere in it; relative imports made absolute,
    and ``importlib.import_module("<name>")`` of a literal name counted as an import of that name.
    """
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def files(*folders: str) -> list[Path]:
    return [path for folder in folders for path in sorted((PACKAGE / folder).rglob("*.py"))]


def offending(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {}
    for path in paths:
        package = ".".join(path.relative_to(PACKAGE.parent).parts[:-1])
        bad = sorted(name for name in imported_modules(path.read_text(), package) if name.startswith(forbidden))
        if bad:
            found[str(path.relative_to(PACKAGE))] = bad
    return found


@pytest.mark.parametrize("folder", ["common", "nnmppi", "maxdiff", "envs", "wrappers", "synthesis", "hyperparams"])
def test_the_library_never_imports_the_app_layer(folder):
    assert offending(files(folder), APP) == {}
    assert offending([PACKAGE / "__init__.py"], APP) == {}


def test_common_imports_no_algorithm():
    assert offending(files("common"), ALGORITHMS) == {}


def test_the_scan_sees_absolute_and_relative_imports():
    """A check that could not fail would prove nothing."""
    source = "from ..experiments import runner\nimport sb3_maxdiff.zoo\nfrom . import mppi\n"
    assert imported_modules(source, "sb3_maxdiff.common") == {
        "sb3_maxdiff.experiments",
        "sb3_maxdiff.experiments.runner",
        "sb3_maxdiff.zoo",
        "sb3_maxdiff.common",
        "sb3_maxdiff.common.mppi",
    }


def import_graph() -> dict[str, set[str]]:
    """Module of the package -> the modules of the package it imports (a name resolved to the module that holds it)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = {resolve(other) for other in imported_modules(path.read_text(), package) if other.startswith("sb3_maxdiff")}
        graph[name] = {other for other in imported if other is not None and other != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph (its nodes in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for other in sorted(graph.get(node, ())):
            if state.get(other) == 1:
                return [*path[path.index(other) :], other]
            if other not in state and (cycle := visit(other)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_circle():
    assert find_cycle(import_graph()) is None


def test_the_circle_check_sees_string_imports_and_cycles():
    source = "import importlib\ndef load():\n    return importlib.import_module('sb3_maxdiff.zoo')\n"
    assert "sb3_maxdiff.zoo" in imported_modules(source, "sb3_maxdiff")
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None

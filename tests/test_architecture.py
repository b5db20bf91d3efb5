"""The layers of docs/guide/development.md (Architecture): the library never imports the app layer, common/ no algorithm."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "sb3_maxdiff"
APP = ("sb3_maxdiff.experiments", "sb3_maxdiff.zoo", "sb3_maxdiff.train", "sb3_maxdiff.enjoy", "sb3_maxdiff.record_video",
       "sb3_maxdiff.hub", "sb3_maxdiff.cli")  # fmt: skip
ALGORITHMS = ("sb3_maxdiff.nnmppi", "sb3_maxdiff.maxdiff", "sb3_maxdiff.envs", "sb3_maxdiff.wrappers")


def imported_modules(source: str, package: str) -> set[str]:
    """Every module that ``source``, a module of ``package``, imports; relative imports made absolute."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
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

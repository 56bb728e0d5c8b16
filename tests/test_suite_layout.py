"""The suite's own layout: test modules share code through helper modules and fixtures, never each other,
and those that start processes are marked ``live``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SOURCES = sorted(path for path in TESTS.rglob("*.py") if "migrations" not in path.parts)
TEST_MODULES = sorted(TESTS.glob("test_*.py"))
# What a module needs to start processes: live server fixtures, sites, servers, the stdio demo, the browser and
# the fresh project, or subprocess itself.
PROCESS_MODULES = {
    "tests.live.browser",
    "tests.live.cluster",
    "tests.live.demo",
    "tests.live.fresh_project",
    "tests.live.fixtures",
    "tests.live.servers",
    "tests.live.sites",
    "subprocess",
}


def imported_modules(path: Path, root: Path = TESTS.parent) -> list[str]:
    """Every module ``path`` imports, absolute or relative, with ``from X import Y`` also naming ``X.Y``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = path.relative_to(root).parts[:-1]
                anchor = ".".join(package[: len(package) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found.append(base)
            found.extend(f"{base}.{alias.name}" for alias in node.names)
    return found


def is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and (parts[-1].startswith("test_") or parts[-1] == "conftest")


@pytest.mark.parametrize("path", SOURCES, ids=[str(path.relative_to(TESTS)) for path in SOURCES])
def test_no_module_of_the_suite_imports_a_test_module_or_a_conftest(path: Path) -> None:
    assert [name for name in imported_modules(path) if is_test_module(name)] == []


def test_the_layout_check_sees_test_modules_imported_every_way(tmp_path: Path) -> None:
    source = tmp_path / "tests" / "test_example.py"
    source.parent.mkdir()
    source.write_text(
        "import tests.test_a\n"
        "from tests.test_b import helper\n"
        "from tests import test_c\n"
        "from .test_d import helper\n"
        "from . import conftest\n"
        "from tests.wire import Wire\n"
    )
    imported = [name for name in imported_modules(source, root=tmp_path) if is_test_module(name)]

    assert imported == ["tests.test_a", "tests.test_b", "tests.test_c", "tests.test_d", "tests.conftest"]


def assigned(path: Path, name: str) -> ast.expr | None:
    """The value a test module assigns to ``name`` at its top level."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", "") == name for target in node.targets):
            return node.value
    return None


def starts_processes(path: Path) -> bool:
    plugins = assigned(path, "pytest_plugins")
    loaded = {node.value for node in ast.walk(plugins) if isinstance(node, ast.Constant)} if plugins else set()
    return bool((set(imported_modules(path)) | loaded) & PROCESS_MODULES)


def marked_live(path: Path) -> bool:
    mark = assigned(path, "pytestmark")
    return mark is not None and "pytest.mark.live" in ast.unparse(mark)


@pytest.mark.parametrize("path", TEST_MODULES, ids=[path.name for path in TEST_MODULES])
def test_a_test_module_is_marked_live_exactly_when_it_starts_processes(path: Path) -> None:
    assert marked_live(path) == starts_processes(path)

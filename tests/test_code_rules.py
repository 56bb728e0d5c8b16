"""The package's own code rules: imports belong at the top of a module, and the few that cannot be there say why.

An import inside a function hides a module's dependencies and usually works around an import cycle or the app
registry. Those that must stay (``AppConfig.ready()``, an optional dependency, a module a site imports before
Django is set up) carry a comment saying so, on their line or the line above; a run of imports shares one.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mcp_tools"
#: At most this many imports inside functions in the whole package.
MAX_FUNCTION_IMPORTS = 10
#: Imports inside functions that carry no comment yet, as (module path, function); this list only shrinks.
UNEXPLAINED: set[tuple[str, str]] = set()
# What linters and type checkers read in a comment (noqa codes, type-ignore codes), which explains nothing.
MARKERS = re.compile(r"noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?")


@dataclass(frozen=True)
class FunctionImport:
    path: str
    function: str
    line: int
    explained: bool

    def __str__(self) -> str:
        return f"{self.path}:{self.line} (in {self.function})"


def explaining_lines(source: str) -> set[int]:
    """The lines holding a comment that says something beyond markers for linters and type checkers."""
    found = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and re.search(r"\w", MARKERS.sub("", token.string.lstrip("#"))):
            found.add(token.start[0])
    return found


def function_imports(path: Path) -> list[FunctionImport]:
    """Every import statement inside a function of ``path``, in line order, and whether a comment explains it."""
    source = path.read_text()
    comments = explaining_lines(source)
    inside: dict[int, tuple[ast.Import | ast.ImportFrom, str]] = {}
    for function in ast.walk(ast.parse(source, str(path))):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    inside.setdefault(node.lineno, (node, function.name))  # the outermost function names it
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    explained_ends: set[int] = set()  # the last lines of explained imports, which explain the import right below
    found = []
    for line, (node, function) in sorted(inside.items()):
        end = node.end_lineno or line
        explained = any(number in comments for number in range(line - 1, end + 1)) or line - 1 in explained_ends
        if explained:
            explained_ends.add(end)
        found.append(FunctionImport(name, function, line, explained))
    return found


def package_function_imports() -> list[FunctionImport]:
    paths = sorted(path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts)
    return [found for path in paths for found in function_imports(path)]


def test_every_import_inside_a_function_says_why_it_is_there() -> None:
    unexpected = [
        str(found)
        for found in package_function_imports()
        if not found.explained and (found.path, found.function) not in UNEXPLAINED
    ]

    assert unexpected == [], (
        "Move these imports to the top of their modules, or say in a comment on the line above why they must "
        "run later (ready(), an optional dependency, a module imported before Django is set up)"
    )


def test_the_list_of_unexplained_imports_names_only_imports_that_are_still_unexplained() -> None:
    still = {(found.path, found.function) for found in package_function_imports() if not found.explained}

    assert sorted(UNEXPLAINED - still) == [], "These now have a comment or are gone: remove them from UNEXPLAINED"


def test_imports_inside_functions_stay_few() -> None:
    found = package_function_imports()

    assert len(found) <= MAX_FUNCTION_IMPORTS, "\n".join(map(str, found))


def test_the_rule_sees_an_explained_run_of_imports_and_an_unexplained_one(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "def ready():\n"
        "    # Imported once the registry is ready.\n"
        "    from a import b\n"
        "    from c import (\n"
        "        d,\n"
        "    )\n"
        "    from e import f\n"
        "\n"
        "    from g import h\n"
        "\n"
        "\n"
        "def optional():\n"
        "    import yaml  # an optional extra\n"
        "\n"
        "    import json  # noqa: F401\n"
        "    if True:\n"
        "        import os  # type: ignore[import]\n"
    )

    found = [(item.line, item.explained) for item in function_imports(source)]

    assert found == [(3, True), (4, True), (7, True), (9, False), (13, True), (15, False), (17, False)]

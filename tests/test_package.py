"""The package as it is published: ``python -m build`` makes an sdist and a wheel that ``twine check --strict``
accepts, the wheel holds every file of ``mcp_tools/`` in the checkout (templates, static files and migrations
among them) and the metadata the package index shows, and the sdist builds the same wheel again.

They build from a copy of the files git knows (tracked, and new ones not ignored), as a fresh clone would,
so that nothing lying in the checkout slips in and the checkout gets no ``build/`` or ``*.egg-info``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest
from trove_classifiers import classifiers as KNOWN_CLASSIFIERS

import mcp_tools
from tests.live.servers import ROOT

pytestmark = pytest.mark.live

BUILD_TIMEOUT = 300
DIST_INFO = f"django_mcp_tools-{mcp_tools.__version__}.dist-info"
REPOSITORY = "https://github.com/django-mcp-tools/django-mcp-tools"
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
DJANGO_PIN = re.compile(r"^Django==(\d+\.\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Built:
    """What ``python -m build`` made: the sdist, the wheel built from it, and a wheel built from the tree."""

    sdist: Path
    wheel: Path
    tree_wheel: Path


def git_files(*paths: str) -> list[str]:
    """The files git knows under ``paths``: tracked, and untracked ones that are not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *paths],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    return sorted({name for name in listed.split("\0") if name and (ROOT / name).is_file()})


def build(*arguments: str | Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", *map(str, arguments)], check=True, capture_output=True, timeout=BUILD_TIMEOUT
    )


def wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}


def metadata(wheel: Path) -> Message:
    return Parser().parsestr(wheel_files(wheel)[f"{DIST_INFO}/METADATA"].decode())


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("Needs a git checkout: the package is compared with the files git knows")
    root = tmp_path_factory.mktemp("package")
    source = root / "source"
    for name in git_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    # As published: the sdist from the tree, the wheel from the sdist.
    build("--outdir", root / "dist", source)
    build("--wheel", "--outdir", root / "tree", source)
    [sdist] = (root / "dist").glob("*.tar.gz")
    [wheel] = (root / "dist").glob("*.whl")
    [tree_wheel] = (root / "tree").glob("*.whl")
    return Built(sdist, wheel, tree_wheel)


def test_twine_accepts_the_sdist_and_the_wheel_strictly(built: Built) -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", built.sdist, built.wheel],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout


def test_the_distributions_are_named_for_the_version(built: Built) -> None:
    version = mcp_tools.__version__

    assert (built.sdist.name, built.wheel.name) == (
        f"django_mcp_tools-{version}.tar.gz",
        f"django_mcp_tools-{version}-py3-none-any.whl",
    )


def test_the_wheel_holds_every_file_of_the_package_and_nothing_else(built: Built) -> None:
    package = [name for name in wheel_files(built.wheel) if not name.startswith(DIST_INFO)]
    checkout = git_files("mcp_tools")

    assert sorted(package) == checkout
    # What a site needs beside the code, named so that the comparison above cannot pass on an empty listing.
    for kind in ("mcp_tools/migrations/0", "mcp_tools/oauth/migrations/0", "/templates/", "/static/", "/py.typed"):
        assert any(kind in name for name in package), kind


def test_the_wheel_carries_the_licence(built: Built) -> None:
    files = wheel_files(built.wheel)

    assert files[f"{DIST_INFO}/licenses/LICENSE"] == (ROOT / "LICENSE").read_bytes()
    assert metadata(built.wheel)["License-Expression"] == "BSD-3-Clause"


def test_the_metadata_names_version_python_extras_and_urls(built: Built) -> None:
    meta = metadata(built.wheel)

    assert (meta["Name"], meta["Version"], meta["Requires-Python"]) == (
        "django-mcp-tools",
        mcp_tools.__version__,
        ">=3.11",
    )
    assert meta.get_all("Provides-Extra") == ["redis", "drf", "oauth"]
    assert "Django<6.2,>=5.2" in meta.get_all("Requires-Dist")
    assert meta["Author"] == "django-mcp-tools contributors"
    assert meta.get_all("Project-URL") == [
        f"Homepage, {REPOSITORY}",
        f"Documentation, {REPOSITORY}/tree/main/docs",
        f"Changelog, {REPOSITORY}/blob/main/CHANGELOG.md",
        f"Issues, {REPOSITORY}/issues",
    ]


def test_the_classifiers_name_the_versions_tested_and_the_index_knows_them(built: Built) -> None:
    declared = metadata(built.wheel).get_all("Classifier")
    # The Django series the suite runs on: requirements.txt's, and each requirements-django*.txt's.
    pins = [ROOT / "requirements.txt", *sorted(ROOT.glob("requirements-django*.txt"))]
    tested = {match[1] for path in pins for match in DJANGO_PIN.finditer(path.read_text())}

    assert [each for each in declared if each not in KNOWN_CLASSIFIERS] == []
    assert {each.rpartition(" :: ")[2] for each in declared if each.startswith("Framework :: Django :: ")} == tested
    assert tested == {"5.2", "6.1"}
    assert [each for each in declared if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", each)] == [
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
    ]
    assert {"Framework :: Django", "Typing :: Typed"} <= set(declared)


def test_the_description_is_the_readme_with_links_that_work_on_the_index(built: Built) -> None:
    description = metadata(built.wheel).get_payload()
    readme = (ROOT / "README.md").read_text()
    assert isinstance(description, str)

    targets = MARKDOWN_LINK.findall(description)
    assert len(targets) == len(MARKDOWN_LINK.findall(readme)) > 20
    assert [target for target in targets if not target.startswith(("https://", "http://", "#"))] == []
    assert f"]({REPOSITORY}/blob/main/docs/deployment.md#faults-and-isolation)" in description
    assert MARKDOWN_LINK.sub("", description) == MARKDOWN_LINK.sub("", readme)


def test_the_sdist_builds_the_same_wheel_as_the_tree(built: Built) -> None:
    assert wheel_files(built.wheel) == wheel_files(built.tree_wheel)


def test_the_sdist_holds_the_package_docs_tests_and_demo_site_but_not_the_benchmarks(built: Built) -> None:
    with tarfile.open(built.sdist) as archive:
        prefix = f"django_mcp_tools-{mcp_tools.__version__}/"
        names = {member.name.removeprefix(prefix) for member in archive.getmembers() if member.isfile()}
    wanted = git_files("mcp_tools", "docs", "tests", "project", "templates")
    wanted += ["CHANGELOG.md", "LICENSE", "README.md", "Makefile", "manage.py", "requirements.txt"]

    assert [name for name in wanted if name not in names] == []
    assert [name for name in names if name.startswith(("bench/", ".ci/", "BENCHMARKS"))] == []
    assert [name for name in names if "__pycache__" in name or name.endswith(".pyc")] == []


def test_the_version_has_one_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())

    assert "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "mcp_tools.__version__"}

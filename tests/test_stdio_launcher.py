"""``python -m mcp_tools stdio``: a real process started as docs/clients.md tells Claude Desktop and Cursor to
start it, from a folder of the client's choosing, and the one line it writes when the settings do not import."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.live.servers import ROOT
from tests.live.sites import Site

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 20
COMMAND_TIMEOUT = 60
CLIENTS_DOC = ROOT / "docs" / "clients.md"
JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.DOTALL)
DOCUMENTED_SITE = "/path/to/site"
DOCUMENTED_SETTINGS = "mysite.settings"


def installed(tmp_path: Path) -> Path:
    """A folder that holds the package as a site's virtualenv does, and nothing else of this repository."""
    packages = tmp_path / "site-packages"
    packages.mkdir()
    (packages / "mcp_tools").symlink_to(ROOT / "mcp_tools", target_is_directory=True)
    return packages


def client_env(site: Site, packages: Path) -> dict[str, str]:
    """The site's switches (its database) as a client passes its environment: no settings module, nothing
    of the repository on the import path but the installed package."""
    env = {key: value for key, value in site.env.items() if key != "DJANGO_SETTINGS_MODULE"}
    return {**env, "PYTHONPATH": str(packages), "MCP_TEST_STDIO_POLL_SECONDS": "0.1"}


def documented_stdio_servers(heading: str) -> list[dict[str, Any]]:
    """The stdio entries of the ``mcpServers`` JSON under ``## heading`` in docs/clients.md."""
    section = CLIENTS_DOC.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    servers = json.loads(JSON_BLOCK.findall(section)[0])["mcpServers"]
    return [server for server in servers.values() if "command" in server]


def launch(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, input=b"", capture_output=True, timeout=COMMAND_TIMEOUT, check=False
    )


@pytest.mark.parametrize("heading", ["Claude Desktop", "Cursor"])
async def test_the_documented_configuration_serves_the_site_from_another_folder(
    live_site: Site, tmp_path: Path, heading: str
) -> None:
    (server,) = documented_stdio_servers(heading)
    assert DOCUMENTED_SETTINGS in server["args"] and "env" not in server
    # The site of this test in place of the documented one: its folder and its settings module.
    site_args = {DOCUMENTED_SITE: str(ROOT), DOCUMENTED_SETTINGS: live_site.settings}
    args = [site_args.get(arg, arg) for arg in server["args"]]
    params = StdioServerParameters(
        command=sys.executable, args=args, env=client_env(live_site, installed(tmp_path)), cwd=str(tmp_path)
    )

    async with Client(params, read_timeout_seconds=TIMEOUT) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})

    assert (result.is_error, result.structured_content) == (False, {"result": 5})


@pytest.mark.parametrize(
    ("how", "settings"), [("option", ["--settings", "mysite.settings"]), ("environment", [])], ids=["option", "env"]
)
def test_a_settings_module_that_does_not_import_is_named_on_stderr_with_the_reason(
    live_site: Site, tmp_path: Path, how: str, settings: list[str]
) -> None:
    env = client_env(live_site, installed(tmp_path))
    if how == "environment":
        env["DJANGO_SETTINGS_MODULE"] = "project.settings"  # the demo's, set by a pasted configuration
    site = tmp_path / "site"
    site.mkdir()

    completed = launch(
        ["-m", "mcp_tools", "stdio", "--pythonpath", str(site), *settings, "--user", "alice"], cwd=tmp_path, env=env
    )

    module = "mysite" if how == "option" else "project"
    assert (completed.returncode, completed.stdout) == (1, b"")
    assert completed.stderr.decode() == (
        f"mcp_tools: cannot import the settings module '{module}.settings': ModuleNotFoundError: "
        f"No module named '{module}' (looked in {site} and the installed packages)\n"
    )


def test_a_settings_module_that_raises_is_named_with_the_error_and_its_line(live_site: Site, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "mysite").mkdir(parents=True)
    (site / "mysite" / "__init__.py").write_text("")
    settings = site / "mysite" / "settings.py"
    settings.write_text('import os\n\nSECRET_KEY = os.environ["MYSITE_SECRET_KEY"]\n')

    completed = launch(
        ["-m", "mcp_tools", "stdio", "--pythonpath", str(site), "--settings", "mysite.settings"],
        cwd=tmp_path,
        env=client_env(live_site, installed(tmp_path)),
    )

    assert (completed.returncode, completed.stdout) == (1, b"")
    assert completed.stderr.decode() == (
        "mcp_tools: cannot import the settings module 'mysite.settings': KeyError: 'MYSITE_SECRET_KEY' "
        f"(at {settings}, line 3)\n"
    )


def test_no_settings_module_at_all_is_said_plainly(live_site: Site, tmp_path: Path) -> None:
    completed = launch(["-m", "mcp_tools", "stdio"], cwd=tmp_path, env=client_env(live_site, installed(tmp_path)))

    assert (completed.returncode, completed.stdout) == (1, b"")
    assert completed.stderr.decode() == (
        "mcp_tools: no settings module: give --settings mysite.settings or set DJANGO_SETTINGS_MODULE.\n"
    )


def test_an_unknown_user_is_refused_as_manage_py_refuses_it(live_site: Site, tmp_path: Path) -> None:
    args = ["-m", "mcp_tools", "stdio", "--pythonpath", str(ROOT), "--settings", live_site.settings, "--user", "nobody"]

    completed = launch(args, cwd=tmp_path, env=client_env(live_site, installed(tmp_path)))

    assert (completed.returncode, completed.stdout, completed.stderr) == (1, b"", b"CommandError: No user 'nobody'.\n")

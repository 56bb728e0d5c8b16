"""The MCP Inspector commands of docs/clients.md, run as written against a live server: the Inspector the docs
pin, on the Node its package asks for (``make inspector`` installs both under ``.ci/node``; MCP_INSPECTOR_BIN
names another CLI whose folder also holds a Node 22)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.live import services
from tests.live.servers import ROOT, ServerProcess
from tests.live.sites import Site

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

CLIENTS_DOC = ROOT / "docs" / "clients.md"
DEFAULT_CLI = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"
DOCUMENTED_URL = "http://127.0.0.1:8000/mcp"
SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)
PINNED = re.compile(r"^npx -y @modelcontextprotocol/inspector@(\S+)$")
COMMAND_TIMEOUT = 120


def inspector_section() -> str:
    return CLIENTS_DOC.read_text().split("\n## The MCP Inspector\n", 1)[1].split("\n## ", 1)[0]


def documented_commands() -> list[list[str]]:
    """The section's shell commands, each as its words, continuation lines joined."""
    block = SH_BLOCK.findall(inspector_section())[0]
    return [shlex.split(command) for command in block.replace("\\\n", " ").splitlines() if command.strip()]


def inspector_cli() -> Path:
    """The Inspector's CLI in a ``node_modules/.bin`` folder beside the Node it runs on; skips without one."""
    cli = Path(os.environ.get("MCP_INSPECTOR_BIN", DEFAULT_CLI)).absolute()  # not resolved: .bin holds the Node
    if not cli.is_file():
        services.unavailable(f"Needs the MCP Inspector: run make inspector, or set MCP_INSPECTOR_BIN ({cli} is absent)")
    return cli


def installed_package(cli: Path) -> dict[str, Any]:
    return dict(json.loads((cli.parent.parent / "@modelcontextprotocol" / "inspector" / "package.json").read_text()))


def inspect(cli: Path, words: list[str], server: ServerProcess, token: str = "") -> subprocess.CompletedProcess[str]:
    """One documented command with this server's address and token, and the installed CLI in place of npx."""
    assert PINNED.match(" ".join(words[:3])), words
    arguments = [server.url("/mcp") if word == DOCUMENTED_URL else word.replace("TOKEN", token) for word in words[3:]]
    env = {**os.environ, "PATH": os.pathsep.join([str(cli.parent), os.environ.get("PATH", "")])}
    return subprocess.run(
        [str(cli), *arguments], env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
    )


def answer(completed: subprocess.CompletedProcess[str]) -> Any:
    assert completed.returncode == 0, (completed.stdout, completed.stderr)
    return json.loads(completed.stdout)


def test_the_docs_pin_the_installed_inspector_and_name_the_node_it_declares() -> None:
    package = installed_package(inspector_cli())
    pinned = {PINNED.match(" ".join(words[:3]))[1] for words in documented_commands()}  # type: ignore[index]
    minimum = re.fullmatch(r">=(\d+)\.(\d+)\.0", package["engines"]["node"])

    assert pinned == {package["version"]}
    assert minimum is not None, package["engines"]
    assert f"needs Node {minimum[1]}.{minimum[2]} or\nlater" in inspector_section()


def test_the_documented_commands_send_the_token_then_list_and_call_tools(
    uvicorn_server: ServerProcess, live_site: Site
) -> None:
    cli = inspector_cli()
    listing, call = documented_commands()

    tools = answer(inspect(cli, listing, uvicorn_server, live_site.seeded.token))["tools"]
    result = answer(inspect(cli, call, uvicorn_server, live_site.seeded.token))

    assert "add" in [tool["name"] for tool in tools]
    assert (result["isError"], result["structuredContent"]) == (False, {"result": 5})


def test_the_documented_listing_without_its_header_is_refused(uvicorn_server: ServerProcess) -> None:
    cli = inspector_cli()
    listing, _call = documented_commands()
    at = listing.index("--header")
    # Told not to start an OAuth sign-in, the CLI reports the server's refusal.
    without_token = [*listing[:at], *listing[at + 2 :], "--stored-auth-only"]

    completed = inspect(cli, without_token, uvicorn_server)

    assert completed.returncode != 0
    assert "Authentication required" in completed.stdout + completed.stderr

"""The official MCP conformance suite against a live server, for the 2026-07-28 and 2025-11-25 requirements,
and its authorization-server scenarios against the site's own OAuth authorization server (mcp_tools.oauth).

The suite is a Node 22 program; ``MCP_CONFORMANCE_BIN`` names its CLI in a ``node_modules/.bin`` folder that
also holds that Node (``.ci/run`` installs both under ``.ci/node``). Without it these tests are skipped, and
with ``MCP_REQUIRE_SERVICES=1`` they fail.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.live import services
from tests.live.servers import ROOT, ServerProcess, free_port
from tests.live.sites import Site, sqlite_switches
from tests.oauth_clients import Browser, redirect_parameters

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

SETTINGS = "tests.conformance.settings"
EXPECTED_FAILURES = ROOT / "tests" / "conformance" / "expected-failures.yml"
NODE_MAJOR = 22
RUN_TIMEOUT = 300
VERSION_TIMEOUT = 30
TAIL_LINES = 60
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Conformance:
    """The suite's CLI and an environment whose first ``node`` is the one it needs."""

    cli: Path
    env: dict[str, str]

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [str(self.cli), *args],
                cwd=cwd,
                env=self.env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=RUN_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            output = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else exc.output or ""
            pytest.fail(f"conformance {' '.join(args)} ran longer than {RUN_TIMEOUT}s:\n{tail(output)}")


def tail(output: str) -> str:
    """The last lines of the suite's report, without its colour codes."""
    return "\n".join(COLOUR.sub("", output).splitlines()[-TAIL_LINES:])


def node_major(env: dict[str, str]) -> int:
    completed = subprocess.run(
        ["node", "--version"], env=env, capture_output=True, text=True, timeout=VERSION_TIMEOUT, check=True
    )
    found = re.match(r"v(\d+)\.", completed.stdout.strip())
    return int(found.group(1)) if found else 0


@pytest.fixture(scope="module")
def conformance() -> Conformance:
    value = os.environ.get("MCP_CONFORMANCE_BIN")
    if not value:
        services.unavailable(
            "Needs the MCP conformance suite: set MCP_CONFORMANCE_BIN to its CLI, "
            "e.g. .ci/node/node_modules/.bin/conformance as installed by .ci/run"
        )
    # Not resolved: the symlink's own folder is the one that holds the Node the suite needs.
    cli = Path(value).absolute()
    if not cli.is_file():
        pytest.fail(f"MCP_CONFORMANCE_BIN={value} is not a file", pytrace=False)
    env = {**os.environ, "PATH": os.pathsep.join([str(cli.parent), os.environ.get("PATH", "")])}
    major = node_major(env)
    if major < NODE_MAJOR:
        problem = f"The conformance suite needs Node {NODE_MAJOR}+ first on PATH; {cli.parent} gives Node {major}"
        pytest.fail(problem, pytrace=False)
    return Conformance(cli, env)


@pytest.fixture(scope="module")
def conformance_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    workdir = tmp_path_factory.mktemp("conformance")
    site = Site(workdir, sqlite_switches(workdir), settings=SETTINGS)
    site.prepare()
    return site


@pytest.fixture(scope="module")
def conformance_server(conformance: Conformance, conformance_site: Site) -> Iterator[ServerProcess]:
    with conformance_site.serve("conformance") as (server,):
        yield server


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
def test_conformance_suite_finds_no_failure_outside_the_expected_ones(
    conformance: Conformance, conformance_server: ServerProcess, revision: str, tmp_path: Path
):
    completed = conformance.run(
        "server",
        "--url", conformance_server.url("/mcp"),
        "--requirements", revision,
        "--expected-failures", str(EXPECTED_FAILURES),
        cwd=tmp_path,
    )  # fmt: skip
    if completed.returncode != 0:
        output = tail(completed.stdout + completed.stderr)
        pytest.fail(f"conformance --requirements {revision} exited {completed.returncode}:\n{output}", pytrace=False)


# The suite's scenarios "for an authorization server", run together (the grant reads the metadata the first
# one fetched): authorization-server-metadata-endpoint, and authorization-code-grant with PKCE and a resource
# indicator, during which a person signs in and consents (here, the test's browser).
AUTHORIZATION_TIMEOUT = 60
CONSENTING_USER = ("alice", "alice")  # seeded by tests.live.seed


AUTHORIZATION_SCENARIOS = ["authorization-server-metadata-endpoint", "authorization-code-grant"]


def passed(output: str, scenarios: list[str]) -> bool:
    """Whether the summary lists every scenario and the total as passed, with no failure and no warning."""
    lines = set(COLOUR.sub("", output).splitlines())
    summary = [rf"✓ {re.escape(name)}: \d+ passed, 0 failed" for name in scenarios] + [r"Total: \d+ passed, 0 failed"]
    return all(any(re.fullmatch(pattern, line.strip()) for line in lines) for pattern in summary)


async def test_conformance_suite_passes_every_authorization_server_scenario(
    conformance: Conformance, conformance_server: ServerProcess, tmp_path: Path
):
    port = free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    async with httpx.AsyncClient(timeout=AUTHORIZATION_TIMEOUT) as http:
        registered = await http.post(
            conformance_server.url("/oauth/register/"),
            json={
                "client_name": "Conformance suite",
                "redirect_uris": [callback],
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            },
        )
        assert registered.status_code == 201, registered.text
        process = await asyncio.create_subprocess_exec(
            str(conformance.cli), "authorization",
            "--url", conformance_server.base_url,
            "--client-id", registered.json()["client_id"],
            "--resource", conformance_server.url("/mcp"),
            "--port", str(port),
            cwd=tmp_path, env=conformance.env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        assert process.stdout is not None
        seen: list[str] = []
        try:
            async with asyncio.timeout(AUTHORIZATION_TIMEOUT):
                # The suite prints the URL a person would open, and says when its callback server listens.
                authorization_url = ""
                listening = f"Callback server started: http://127.0.0.1:{port}"
                while not (authorization_url and any(line.startswith(listening) for line in seen)):
                    line = (await process.stdout.readline()).decode(errors="replace")
                    assert line, "the suite ended before asking for consent:\n" + "".join(seen)
                    seen.append(line)
                    if line.startswith(conformance_server.url("/oauth/authorize/?")):
                        authorization_url = line.strip()
                async with Browser(conformance_server.base_url) as browser:
                    await browser.login(*CONSENTING_USER)
                    location = await browser.consent(authorization_url)
                assert location.startswith(callback + "?") and "code" in redirect_parameters(location)
                answered = await http.get(location)
                assert answered.status_code == 200
                rest = (await process.stdout.read()).decode(errors="replace")
                returncode = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    output = "".join(seen) + rest
    assert returncode == 0 and passed(output, AUTHORIZATION_SCENARIOS), tail(output)

"""What the demo tells a new user: ``make demo PORT=...`` and the addresses seed_demo prints, and the landing
page's stdio configuration, which must start the server when pasted into a client that runs elsewhere."""

from __future__ import annotations

import asyncio
import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.live.demo import manage, seeded_demo
from tests.live.servers import ROOT

pytestmark = pytest.mark.live

TIMEOUT = 30
BASE_URL = "http://127.0.0.1:8123"
LANDING_PAGE = (
    "from django.test import Client; "
    "print(Client().get('/', HTTP_HOST='127.0.0.1:8123').content.decode())"
)  # fmt: skip
STDIO_CONFIG = re.compile(r'<pre id="stdio-config">(.*?)</pre>', re.DOTALL)
# Django's own handler, as runserver and gunicorn run it, without the Channels routes of project.asgi.
THROUGH_THE_URLCONF = (
    "from django.test import Client; client = Client(HTTP_HOST='127.0.0.1:8123'); "
    "print(client.get('/mcp/health').status_code, client.post('/mcp', {}, 'application/json').status_code)"
)  # fmt: skip


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env, _database = seeded_demo(tmp_path_factory)
    return env


def test_make_demo_serves_and_prints_the_port_it_is_given() -> None:
    recipe = subprocess.run(
        ["make", "-n", "demo", "PORT=8123"], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=True
    ).stdout

    assert f"seed_demo --token --base-url {BASE_URL}" in recipe
    assert "--host 127.0.0.1 --port 8123" in recipe
    assert "8000" not in recipe


def test_seed_demo_prints_every_address_on_the_given_base_url(demo: dict[str, str]) -> None:
    output = manage(demo, "seed_demo", "--token", "--base-url", BASE_URL + "/").stdout.decode()

    assert f"Landing page:    {BASE_URL}/ " in output
    assert f"Admin:           {BASE_URL}/admin/ " in output
    assert f"MCP endpoint:    {BASE_URL}/mcp " in output
    assert "ws://127.0.0.1:8123/mcp/ws" in output
    assert ":8000" not in output


def test_seed_demo_prints_the_default_address_without_a_base_url(demo: dict[str, str]) -> None:
    output = manage(demo, "seed_demo", "--token").stdout.decode()

    assert "Admin:           http://127.0.0.1:8000/admin/ " in output


@pytest.mark.parametrize("url", ["127.0.0.1:8123", "javascript:alert(1)", "http://", "http://x/?a=1"])
def test_seed_demo_refuses_a_base_url_that_is_no_address(demo: dict[str, str], url: str) -> None:
    with pytest.raises(subprocess.CalledProcessError) as failure:
        manage(demo, "seed_demo", "--base-url", url)

    assert b"--base-url must be an address" in failure.value.stderr


def landing_stdio_config(env: dict[str, str]) -> dict[str, Any]:
    page = manage(env, "shell", "-c", LANDING_PAGE).stdout.decode()
    found = STDIO_CONFIG.search(page)
    assert found is not None, page
    return dict(json.loads(html.unescape(found[1]))["mcpServers"]["shop"])


def test_the_landing_page_names_the_stdio_server_by_absolute_paths(demo: dict[str, str]) -> None:
    server = landing_stdio_config(demo)

    assert Path(server["command"]).is_absolute()
    assert Path(server["command"]).samefile(sys.executable)
    assert server["args"] == [str(ROOT / "manage.py"), "mcp_stdio", "--user", "alice"]
    assert server["env"] == {"DJANGO_SETTINGS_MODULE": "tests.demo_settings"}


async def test_the_landing_page_stdio_configuration_starts_from_another_folder(demo: dict[str, str]) -> None:
    server = await asyncio.to_thread(landing_stdio_config, demo)
    # A client passes the configured env on top of its own; the demo database's path is this test's own.
    env = {**demo, **server["env"]}
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env, cwd="/tmp")

    async with Client(params) as client:
        listing = await asyncio.wait_for(client.list_tools(), TIMEOUT)

    assert "add" in [tool.name for tool in listing.tools]


def test_the_demo_serves_mcp_through_its_urlconf_for_wsgi_servers(demo: dict[str, str]) -> None:
    output = manage(demo, "shell", "-c", THROUGH_THE_URLCONF).stdout.decode()
    # The last line: Django's shell first says what it imported.
    health, without_a_token = output.splitlines()[-1].split()

    assert (health, without_a_token) == ("200", "401")

"""The test app's own tool kind (tests/testapp/kinds.py) imported from a tools file into a live site and called by
the official SDK over Streamable HTTP (both eras) and stdio, as any other tool."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.live.servers import ROOT, ServerProcess
from tests.live.sites import Site, sqlite_switches

pytestmark = pytest.mark.live

TIMEOUT = 10
TOOL = {
    "name": "order_reply",
    "kind": "reply_template",
    "config": {"template": "Hello {{ name }}, order {{ order }} ships today.", "arguments": ["name", "order"]},
    "everyone": True,
}
REPLY = "Hello Ada, order A-17 ships today."


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    workdir = tmp_path_factory.mktemp("kinds")
    prepared = Site(workdir, sqlite_switches(workdir))
    prepared.prepare()
    tools = workdir / "tools.json"
    tools.write_text(json.dumps({"format": "django-mcp-tools", "version": 1, "tools": [TOOL]}), encoding="utf-8")
    prepared.run("manage.py", "mcp_import", str(tools), "--noinput")
    return prepared


@pytest.fixture(scope="module")
def server(site: Site) -> Iterator[ServerProcess]:
    with site.serve("server") as (started,):
        yield started


@asynccontextmanager
async def http_client(server: ServerProcess, token: str, mode: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(server.url("/mcp"), http_client=http), mode=mode) as client:
        yield client


async def listed_and_called(client: Client) -> tuple[Any, list[str]]:
    listed: dict[str, Any] = {}
    cursor: str | None = None
    while True:  # the live site's tools fill several pages
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        listed.update((tool.name, tool) for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    result = await client.call_tool("order_reply", {"name": "Ada", "order": "A-17"})
    assert not result.is_error
    return listed["order_reply"], [block.text for block in result.content if isinstance(block, types.TextContent)]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_lists_and_calls_it_over_streamable_http(site: Site, server: ServerProcess, mode: str) -> None:
    async with http_client(server, site.seeded.token, mode) as client:
        definition, texts = await listed_and_called(client)
    assert definition.input_schema["required"] == ["name", "order"]
    assert definition.annotations is not None and definition.annotations.read_only_hint is True
    assert texts == [REPLY]


async def test_the_sdk_lists_and_calls_it_over_stdio(site: Site) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_stdio", "--user", "alice"], env=site.env, cwd=str(ROOT)
    )
    async with Client(params, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
        _definition, texts = await listed_and_called(client)
    assert texts == [REPLY]

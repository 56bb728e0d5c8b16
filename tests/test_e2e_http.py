"""MCP over real Streamable HTTP: uvicorn serving tests.asgi, driven by the official Python SDK client."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client.subscriptions import ToolsListChanged

from mcp_tools import __version__
from tests.live.admin_client import AdminClient
from tests.live.sdk import every_tool, sdk_client
from tests.live.servers import ServerProcess
from tests.live.sites import Site
from tests.origins import local_origins

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
TOOL_ADMIN = "mcp_tools/tool"
PAGE_SIZE = 5  # tests.settings MCP_TOOLS["PAGE_SIZE"]
MODES = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}


@asynccontextmanager
async def admin(server: ServerProcess, site: Site) -> AsyncIterator[AdminClient]:
    async with AdminClient(server.base_url) as client:
        await client.login(**site.seeded.admin)
        yield client


@pytest.mark.parametrize(("mode", "version"), MODES, ids=[mode for mode, _ in MODES])
async def test_the_client_lands_on_the_revision_of_its_mode(uvicorn_server, live_site, mode, version):
    async with sdk_client(uvicorn_server, live_site.seeded.token, mode) as client:
        assert client.protocol_version == version
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("django-mcp-tools", __version__)
        assert client.server_capabilities.tools == types.ToolsCapability(list_changed=True)


@pytest.mark.parametrize(("mode", "version"), MODES, ids=[mode for mode, _ in MODES])
async def test_every_page_of_tools_is_listed(uvicorn_server, live_site, mode, version):
    async with sdk_client(uvicorn_server, live_site.seeded.token, mode) as client:
        tools, pages = await every_tool(client)

    assert [tool.name for tool in tools] == sorted(live_site.seeded.tools)
    assert pages == math.ceil(len(live_site.seeded.tools) / PAGE_SIZE) > 1


@pytest.mark.parametrize(("mode", "version"), MODES, ids=[mode for mode, _ in MODES])
async def test_add_is_called(uvicorn_server, live_site, mode, version):
    async with sdk_client(uvicorn_server, live_site.seeded.token, mode) as client:
        result = await asyncio.wait_for(client.call_tool("add", {"a": 2, "b": 3}), TIMEOUT)

    assert result.content == [types.TextContent(type="text", text="5")]
    assert (result.structured_content, result.is_error) == ({"result": 5}, False)


@pytest.mark.parametrize(("mode", "version"), MODES, ids=[mode for mode, _ in MODES])
async def test_progress_reaches_the_callback_before_the_result(uvicorn_server, live_site, mode, version):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with sdk_client(uvicorn_server, live_site.seeded.token, mode) as client:
        result = await asyncio.wait_for(
            client.call_tool("sync_progress", {"steps": 3}, progress_callback=on_progress), TIMEOUT
        )

    assert seen == [(1, 3, None), (2, 3, None), (3, 3, None)]
    assert (result.content, result.is_error) == ([types.TextContent(type="text", text="done")], False)


async def test_a_modern_listen_stream_hears_admin_edits(uvicorn_server, live_site):
    pk = live_site.seeded.tools["tags"]
    async with (
        sdk_client(uvicorn_server, live_site.seeded.token, "auto") as client,
        admin(uvicorn_server, live_site) as browser,
    ):
        before, _pages = await every_tool(client)
        async with client.listen(tools_list_changed=True) as subscription:
            await browser.action(TOOL_ADMIN, "disable_tools", [pk])
            hidden_event = await asyncio.wait_for(anext(subscription), TIMEOUT)
            hidden, _pages = await every_tool(client)
            await browser.action(TOOL_ADMIN, "enable_tools", [pk])
            restored_event = await asyncio.wait_for(anext(subscription), TIMEOUT)
            restored, _pages = await every_tool(client)

    assert subscription.honored == types.SubscriptionFilter(tools_list_changed=True)
    assert (hidden_event, restored_event) == (ToolsListChanged(), ToolsListChanged())
    assert hidden == [tool for tool in before if tool.name != "tags"]
    assert restored == before


async def test_a_legacy_session_hears_admin_edits_on_its_get_stream(uvicorn_server, live_site):
    notifications: asyncio.Queue[Any] = asyncio.Queue()
    stream_open = asyncio.Event()

    async def on_message(message: Any) -> None:
        await notifications.put(message)

    async def on_response(response: httpx2.Response) -> None:
        # The server subscribes before it answers the GET, so a change after this is delivered.
        if response.request.method == "GET" and response.status_code == 200:
            stream_open.set()

    token, pk = live_site.seeded.token, live_site.seeded.tools["whoami"]
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT, event_hooks={"response": [on_response]}
    )
    async with (
        sdk_client(uvicorn_server, token, "legacy", http, message_handler=on_message) as client,
        admin(uvicorn_server, live_site) as browser,
    ):
        before, _pages = await every_tool(client)
        await asyncio.wait_for(stream_open.wait(), TIMEOUT)
        await browser.action(TOOL_ADMIN, "disable_tools", [pk])
        hidden_heard = await asyncio.wait_for(notifications.get(), TIMEOUT)
        hidden, _pages = await every_tool(client)
        await browser.action(TOOL_ADMIN, "enable_tools", [pk])
        restored_heard = await asyncio.wait_for(notifications.get(), TIMEOUT)
        restored, _pages = await every_tool(client)

    changed = types.ToolListChangedNotification(method="notifications/tools/list_changed")
    assert (hidden_heard, restored_heard) == (changed, changed)
    assert hidden == [tool for tool in before if tool.name != "whoami"]
    assert restored == before


async def test_only_the_servers_own_origin_may_post(uvicorn_server, live_site):
    headers = {
        "Authorization": f"Bearer {live_site.seeded.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        **MODERN_HEADERS,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": MODERN_META}}
    statuses: list[tuple[str, int]] = []
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        for origin, _accepted in local_origins(uvicorn_server):
            reply = await http.post(uvicorn_server.url("/mcp"), json=body, headers={**headers, "Origin": origin})
            statuses.append((origin, reply.status_code))

    assert statuses == [(origin, 200 if accepted else 403) for origin, accepted in local_origins(uvicorn_server)]

"""Streamable HTTP across processes: two uvicorn processes sharing one database and a Redis channel layer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from mcp_tools.exceptions import INVALID_REQUEST
from tests.live.admin_client import AdminClient
from tests.live.asgi_http import ACCEPT_BOTH, MODERN, modern_request, notification, request
from tests.live.legacy_http import legacy_session
from tests.live.servers import ServerProcess
from tests.live.sites import Site
from tests.live.sse import EventReader

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
LATEST = "2025-11-25"
TOOL_ADMIN = "mcp_tools/tool"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
LIST_CHANGED = "notifications/tools/list_changed"
ADD_RESULT = {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False}
SESSION_NOT_FOUND = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "Session not found"}}


@asynccontextmanager
async def listen_stream(server: ServerProcess, token: str, request_id: Any) -> AsyncIterator[EventReader]:
    """A 2026-07-28 ``subscriptions/listen`` stream for tool list changes, acknowledged once this yields."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": ACCEPT_BOTH,
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "subscriptions/listen",
    }
    body = modern_request(request_id, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    async with (
        httpx.AsyncClient(timeout=TIMEOUT) as http,
        http.stream("POST", server.url("/mcp"), json=body, headers=headers) as response,
    ):
        assert (response.status_code, response.headers["content-type"]) == (200, "text/event-stream")
        reader = EventReader(response.aiter_text())
        ack = await asyncio.wait_for(reader.message(), TIMEOUT)
        assert ack == notification(
            "notifications/subscriptions/acknowledged",
            {"notifications": {"toolsListChanged": True}, "_meta": {SUBSCRIPTION_ID: request_id}},
        )
        yield reader


@asynccontextmanager
async def admin(server: ServerProcess, site: Site) -> AsyncIterator[AdminClient]:
    async with AdminClient(server.base_url) as client:
        await client.login(**site.seeded.admin)
        yield client


async def test_a_session_opened_on_one_process_is_served_and_ended_by_another(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    async with legacy_session(shared_site.seeded.token, a) as session:
        initialized = await session.post(b, notification("notifications/initialized"))
        listing = await session.post(b, request(1, "tools/list"))
        called = await session.post(b, request(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))
        ended = await session.delete(b)
        on_a = await session.post(a, request(3, "tools/list"))
        on_b = await session.post(b, request(4, "tools/list"))

    assert initialized.status_code == 202
    assert (listing.status_code, listing.headers["Mcp-Session-Id"]) == (200, session.session_id)
    assert [tool["name"] for tool in listing.json()["result"]["tools"]] == sorted(shared_site.seeded.tools)[:5]
    assert (called.status_code, called.json()) == (200, {"jsonrpc": "2.0", "id": 2, "result": ADD_RESULT})
    assert ended.status_code == 200
    assert (on_a.status_code, on_a.json()) == (404, SESSION_NOT_FOUND)
    assert (on_b.status_code, on_b.json()) == (404, SESSION_NOT_FOUND)


@pytest.mark.parametrize("editor", [0, 1], ids=["edit-on-a", "edit-on-b"])
async def test_an_edit_through_either_process_reaches_http_listeners_on_the_first(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site, editor: int
):
    a = uvicorn_pair[0]
    seed = shared_site.seeded
    async with (
        legacy_session(seed.token, a) as session,
        session.get_stream(a) as get_stream,
        listen_stream(a, seed.token, "across") as listen,
        admin(uvicorn_pair[editor], shared_site) as browser,
    ):
        await browser.action(TOOL_ADMIN, "disable_tools", [seed.tools["tags"]])
        heard_on_get = await asyncio.wait_for(get_stream.message(), TIMEOUT)
        heard_on_listen = await asyncio.wait_for(listen.message(), TIMEOUT)
        await browser.action(TOOL_ADMIN, "enable_tools", [seed.tools["tags"]])
        heard_again = await asyncio.wait_for(get_stream.message(), TIMEOUT)

    assert heard_on_get == heard_again == notification(LIST_CHANGED)
    assert heard_on_listen == notification(LIST_CHANGED, {"_meta": {SUBSCRIPTION_ID: "across"}})

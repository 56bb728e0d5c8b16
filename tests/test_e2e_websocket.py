"""MCP over a real WebSocket: uvicorn serving tests.asgi in its own process, driven by ``websockets``."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from mcp_tools import __version__
from mcp_tools.exceptions import INVALID_REQUEST
from tests.challenges import challenge
from tests.live.admin_client import AdminClient
from tests.live.servers import ServerProcess
from tests.live.sites import Site
from tests.live.websocket_client import mcp_websocket
from tests.origins import local_origins

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

LATEST = "2025-11-25"
LIST_CHANGED = "notifications/tools/list_changed"
TOOL_ADMIN = "mcp_tools/tool"
PAGE_SIZE = 5  # tests.settings MCP_TOOLS["PAGE_SIZE"]
NEW_TITLE = "Sum of two integers"
ADD_RESULT = {
    "content": [{"type": "text", "text": "5"}],
    "structuredContent": {"result": 5},
    "isError": False,
}


def retitled(definition: dict[str, Any], title: str) -> dict[str, Any]:
    """A tool definition with a new title, which the annotations repeat."""
    return {**definition, "title": title, "annotations": {**definition["annotations"], "title": title}}


async def test_handshake_echoes_the_mcp_subprotocol_and_initializes(uvicorn_server: ServerProcess, live_site: Site):
    token = live_site.seeded.token
    async with mcp_websocket(uvicorn_server.ws_url(), token) as client:
        assert client.subprotocol == "mcp"
        reply = await client.initialize(LATEST)
    assert reply == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": LATEST,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "django-mcp-tools", "version": __version__},
        },
    }


async def test_session_lists_in_pages_calls_and_hears_an_admin_edit(uvicorn_server: ServerProcess, live_site: Site):
    token, tools = live_site.seeded.token, live_site.seeded.tools
    async with mcp_websocket(uvicorn_server.ws_url(), token) as client:
        await client.initialize(LATEST)
        before, pages = await client.list_tools()
        assert [tool["name"] for tool in before] == sorted(tools)
        assert pages == math.ceil(len(tools) / PAGE_SIZE) > 1

        call = await client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert call == {"jsonrpc": "2.0", "id": client.next_id, "result": ADD_RESULT}

        async with AdminClient(uvicorn_server.base_url) as admin:
            await admin.login(**live_site.seeded.admin)
            await admin.change(TOOL_ADMIN, tools["add"], title=NEW_TITLE)

        assert await client.next_notification(LIST_CHANGED) == {"jsonrpc": "2.0", "method": LIST_CHANGED}
        after, _pages = await client.list_tools()
    assert after == [retitled(tool, NEW_TITLE) if tool["name"] == "add" else tool for tool in before]


async def test_admin_disable_action_hides_the_tool_and_enable_restores_it(
    uvicorn_server: ServerProcess, live_site: Site
):
    token, tools = live_site.seeded.token, live_site.seeded.tools
    async with mcp_websocket(uvicorn_server.ws_url(), token) as client:
        await client.initialize(LATEST)
        before, _pages = await client.list_tools()
        async with AdminClient(uvicorn_server.base_url) as admin:
            await admin.login(**live_site.seeded.admin)
            await admin.action(TOOL_ADMIN, "disable_tools", [tools["tags"]])
            await client.next_notification(LIST_CHANGED)
            hidden, _pages = await client.list_tools()
            await admin.action(TOOL_ADMIN, "enable_tools", [tools["tags"]])
            await client.next_notification(LIST_CHANGED)
            restored, _pages = await client.list_tools()
    assert hidden == [tool for tool in before if tool["name"] != "tags"]
    assert restored == before


async def test_draft_revision_call_returns_tool_result(uvicorn_server: ServerProcess, live_site: Site):
    token = live_site.seeded.token
    async with mcp_websocket(uvicorn_server.ws_url(), token) as client:
        reply = await client.initialize(1, initialized=False)
        assert reply["result"]["protocolVersion"] == 1
        call = await client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert call == {"jsonrpc": "2.0", "id": 2, "result": {"toolResult": 5}}


@pytest.mark.parametrize(
    ("token", "detail", "oauth_error"),
    [
        (None, "Authentication required", ""),
        ("mcp_not-a-token", "The access token is invalid or expired.", "invalid_token"),
    ],
    ids=["missing", "invalid"],
)
async def test_handshake_without_a_valid_token_is_refused_with_401(
    uvicorn_server: ServerProcess, token: str | None, detail: str, oauth_error: str
):
    with pytest.raises(InvalidStatus) as refused:
        async with mcp_websocket(uvicorn_server.ws_url(), token):
            pass
    response = refused.value.response
    assert response.status_code == 401
    expected = challenge(oauth_error, detail if oauth_error else "", origin=uvicorn_server.url(""))
    assert response.headers["WWW-Authenticate"] == expected
    assert json.loads(response.body or b"") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": INVALID_REQUEST, "message": detail},
    }


async def test_handshake_from_a_foreign_origin_is_refused_with_403(uvicorn_server: ServerProcess, live_site: Site):
    token = live_site.seeded.token
    with pytest.raises(InvalidStatus) as refused:
        async with mcp_websocket(uvicorn_server.ws_url(), token, origin="http://evil.example"):
            pass
    response = refused.value.response
    assert response.status_code == 403
    assert "WWW-Authenticate" not in response.headers
    assert json.loads(response.body or b"") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": INVALID_REQUEST, "message": "Invalid Origin header"},
    }


async def test_only_the_servers_own_origin_may_open_a_handshake(uvicorn_server: ServerProcess, live_site: Site):
    token = live_site.seeded.token
    verdicts: list[tuple[str, bool]] = []
    for origin, _accepted in local_origins(uvicorn_server):
        try:
            async with mcp_websocket(uvicorn_server.ws_url(), token, origin=origin) as client:
                await client.initialize(LATEST)
        except InvalidStatus as refused:
            assert refused.response.status_code == 403
            verdicts.append((origin, False))
        else:
            verdicts.append((origin, True))

    assert verdicts == local_origins(uvicorn_server)

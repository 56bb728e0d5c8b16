"""list_changed across processes: two uvicorn processes sharing one database and a Redis channel layer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.live.admin_client import AdminClient
from tests.live.servers import ServerProcess
from tests.live.sites import Seed, Site
from tests.live.websocket_client import mcp_websocket

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

LATEST = "2025-11-25"
LIST_CHANGED = "notifications/tools/list_changed"
TOOL_ADMIN = "mcp_tools/tool"
NEW_TITLE = "Adds across processes"


def retitled(definition: dict[str, Any], title: str) -> dict[str, Any]:
    """A tool definition with a new title, which the annotations repeat."""
    return {**definition, "title": title, "annotations": {**definition["annotations"], "title": title}}


async def listed_by_a_new_session(server: ServerProcess, seed: Seed) -> list[dict[str, Any]]:
    async with mcp_websocket(server.ws_url(), seed.token) as client:
        await client.initialize(LATEST)
        tools, _pages = await client.list_tools()
    return tools


async def test_admin_edit_on_one_process_notifies_sessions_on_every_process(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    seed = shared_site.seeded
    async with mcp_websocket(a.ws_url(), seed.token) as on_a, mcp_websocket(b.ws_url(), seed.token) as on_b:
        await on_a.initialize(LATEST)
        await on_b.initialize(LATEST)
        before, _pages = await on_a.list_tools()

        async with AdminClient(b.base_url) as admin:
            await admin.login(**seed.admin)
            await admin.change(TOOL_ADMIN, seed.tools["add"], title=NEW_TITLE)

        assert await on_a.next_notification(LIST_CHANGED) == {"jsonrpc": "2.0", "method": LIST_CHANGED}
        assert await on_b.next_notification(LIST_CHANGED) == {"jsonrpc": "2.0", "method": LIST_CHANGED}
        after, _pages = await on_a.list_tools()
    assert after == [retitled(tool, NEW_TITLE) if tool["name"] == "add" else tool for tool in before]


async def test_session_opened_after_an_edit_on_another_process_lists_the_edit(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    # While A has no open session, no change event reaches it; its next session must not list stale tools.
    a, b = uvicorn_pair
    seed = shared_site.seeded
    before = await listed_by_a_new_session(a, seed)
    async with AdminClient(b.base_url) as admin:
        await admin.login(**seed.admin)
        await admin.action(TOOL_ADMIN, "disable_tools", [seed.tools["whoami"]])
        hidden = await listed_by_a_new_session(a, seed)
        await admin.action(TOOL_ADMIN, "enable_tools", [seed.tools["whoami"]])
        restored = await listed_by_a_new_session(a, seed)
    assert hidden == [tool for tool in before if tool["name"] != "whoami"]
    assert restored == before

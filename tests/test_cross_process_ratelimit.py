"""Rate limits across processes: two uvicorn processes count one user's calls in the shared Redis cache."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.live.admin_client import AdminClient
from tests.live.servers import ServerProcess
from tests.live.sites import Site
from tests.live.websocket_client import MCPWebSocket, mcp_websocket

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

LATEST = "2025-11-25"
TOOL_ADMIN = "mcp_tools/tool"
# An hour-long window: the calls of one run cannot straddle two counting windows.
RATE = "5/h"
LIMITED = re.compile(rf"Rate limit {re.escape(RATE)} exceeded: retry after \d+ s\.")


async def add(client: MCPWebSocket) -> dict[str, Any]:
    reply = await client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    return dict(reply["result"])


async def test_one_users_calls_on_two_processes_count_against_one_limit(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    seed = shared_site.seeded
    async with AdminClient(a.base_url) as admin:
        await admin.login(**seed.admin)
        await admin.change(TOOL_ADMIN, seed.tools["add"], rate_limit=RATE)

    async with mcp_websocket(a.ws_url(), seed.token) as on_a, mcp_websocket(b.ws_url(), seed.token) as on_b:
        await on_a.initialize(LATEST)
        await on_b.initialize(LATEST)
        answered = [await add(client) for client in (on_a, on_a, on_a, on_b, on_b)]
        sixth = await add(on_b)
        seventh = await add(on_a)

    assert [result["structuredContent"] for result in answered] == [{"result": 5}] * 5
    for refused in (sixth, seventh):
        [block] = refused["content"]
        assert LIMITED.fullmatch(block["text"]), refused
        assert refused == {"content": [block], "isError": True}

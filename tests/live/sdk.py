"""The official Python SDK's client on a live server's /mcp, authenticated with a bearer token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.live.servers import ServerProcess

TIMEOUT = 10


@asynccontextmanager
async def sdk_client(
    server: ServerProcess, token: str, mode: str, http: httpx2.AsyncClient | None = None, **options: Any
) -> AsyncIterator[Client]:
    """The SDK's client on the server's /mcp in ``mode`` ("legacy", "auto" or a modern revision)."""
    http = http or httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(server.url("/mcp"), http_client=http), mode=mode, **options) as c:
        yield c


async def every_tool(client: Client) -> tuple[list[types.Tool], int]:
    """Every tool the client may see, read page by page past any cache, and how many pages that took."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await asyncio.wait_for(client.list_tools(cursor=cursor, cache_mode="bypass"), TIMEOUT)
        pages += 1
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools, pages

"""A token's own rate over real transports: uvicorn serving tests.asgi, the SDK over HTTP and a WebSocket."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.live.servers import ServerProcess
from tests.live.sites import Site
from tests.live.websocket_client import mcp_websocket

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
LATEST = "2025-11-25"
# An hour's window: three calls a few milliseconds apart never straddle two windows.
RATE = "2/h"
REFUSED = re.compile(rf"Rate limit {re.escape(RATE)} exceeded: retry after \d+ s\.")
# Three different tools, none with a rate of its own: only the token's rate can refuse them.
CALLS = [("add", {"a": 2, "b": 3}), ("greet", {"name": "Ada"}), ("multiply", {"x": 2, "y": 3})]
ANSWERS = ["5", "Hello, Ada!", "6"]


def new_token(site: Site, *options: str) -> str:
    return site.run("manage.py", "mcp_token", "create", site.seeded.user, *options).stdout.strip()


@asynccontextmanager
async def http_client(server: ServerProcess, token: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(server.url("/mcp"), http_client=http), mode="legacy") as client:
        yield client


async def sdk_answers(server: ServerProcess, token: str) -> list[tuple[str, bool]]:
    async with http_client(server, token) as client:
        results = [await asyncio.wait_for(client.call_tool(name, arguments), TIMEOUT) for name, arguments in CALLS]
    return [(r.content[0].text if isinstance(r.content[0], types.TextContent) else "", r.is_error) for r in results]


async def ws_answers(server: ServerProcess, token: str) -> list[tuple[str, bool]]:
    answers = []
    async with mcp_websocket(server.ws_url(), token) as client:
        await client.initialize(LATEST)
        for name, arguments in CALLS:
            reply = await client.request("tools/call", {"name": name, "arguments": arguments})
            answers.append((reply["result"]["content"][0]["text"], reply["result"]["isError"]))
    return answers


def refused_third(answers: list[tuple[str, bool]]) -> bool:
    (text, is_error) = answers[2]
    return answers[:2] == [(ANSWERS[0], False), (ANSWERS[1], False)] and is_error and bool(REFUSED.fullmatch(text))


@pytest.mark.parametrize("answers", [sdk_answers, ws_answers], ids=["http", "websocket"])
async def test_the_third_call_with_a_token_rated_two_is_refused_while_another_token_of_the_user_is_not(
    uvicorn_server: ServerProcess, live_site: Site, answers: Any
):
    limited = new_token(live_site, "--rate", RATE)
    unlimited = new_token(live_site)

    assert refused_third(await answers(uvicorn_server, limited))
    assert await answers(uvicorn_server, unlimited) == [(text, False) for text in ANSWERS]

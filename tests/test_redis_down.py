"""Redis down: workers sharing a private Redis (channel layer and rate-limit cache) and a database keep their
sessions and answer calls while it is stopped, find changes by polling the change counters, report
themselves degraded, and hear the layer again once it is back, without a restart.

Two workers fail closed (django-ratelimit's default) and a third fails open (``RATELIMIT_FAIL_OPEN``).
Beside a live layer the safety poll is an hour, so a change that arrives in seconds came through it.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
import redis
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_tools.access.credentials import TOKEN_REVOKED
from mcp_tools.transports.websocket import CLOSE_UNAUTHENTICATED
from tests.live import services
from tests.live.admin_client import AdminClient
from tests.live.redis_server import REDIS_SERVER, RedisServer, private_redis
from tests.live.servers import ServerProcess
from tests.live.sites import Site, shared_switches
from tests.live.stdio_client import next_message, stdio_session
from tests.live.websocket_client import MCPWebSocket, mcp_websocket, websocket_closed

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

LATEST = "2025-11-25"
LIST_CHANGED = "notifications/tools/list_changed"
TOOL_ADMIN = "mcp_tools/tool"
TIMEOUT = 10
FRESHNESS = 2.0  # FRESHNESS_SECONDS: while the layer is down the counters are read every 0.5 s
SAFETY_POLL = 3600.0  # SAFETY_POLL_SECONDS: beside a live layer the counters are never read in time
RATE = "1000/h"  # DEFAULT_RATE: every tool is rate-limited, and no test comes near the limit
UNAVAILABLE = re.compile(r"Rate limits are temporarily unavailable: retry after \d+ s\.")
DEGRADED = {"status": "degraded", "checks": {"database": "ok", "cache": "failed", "channel_layer": "failed"}}
HEALTHY = {"status": "ok", "checks": {"database": "ok", "cache": "ok", "channel_layer": "ok"}}


@dataclass
class Outage:
    """The private Redis, the site on it, two workers that fail closed and one that fails open."""

    redis: RedisServer
    site: Site
    a: ServerProcess
    b: ServerProcess
    fail_open: ServerProcess

    @property
    def token(self) -> str:
        return self.site.seeded.token

    async def mutate(self, *args: str) -> Any:
        """Run one change in a process of its own, as ``manage.py shell`` would; returns once committed."""
        completed = await asyncio.to_thread(self.site.run, "-m", "tests.live.mutate", *args)
        return json.loads(completed.stdout)

    def hub_members(self) -> int:
        """How many worker hubs have joined the change group in Redis."""
        client = redis.Redis.from_url(self.redis.url)
        try:
            prefix, group = self.site.switches["MCP_TEST_REDIS_PREFIX"], self.site.switches["MCP_TEST_GROUP_NAME"]
            return int(client.zcard(f"{prefix}:group:{group}"))
        finally:
            client.close()


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outage]:
    if not Path(REDIS_SERVER).exists():
        services.unavailable(f"Needs {REDIS_SERVER} to run a private Redis")
    workdir = tmp_path_factory.mktemp("redis-down")
    tuning = {
        "MCP_TEST_FRESHNESS_SECONDS": str(FRESHNESS),
        "MCP_TEST_SAFETY_POLL_SECONDS": str(SAFETY_POLL),
        "MCP_TEST_DEFAULT_RATE": RATE,
        "MCP_TEST_CACHE_RETRY_SECONDS": "1",
    }
    with private_redis(workdir) as server, shared_switches(workdir, server.url, services.postgres_url()) as switches:
        try:
            site = Site(workdir, {**switches, **tuning})
            site.prepare()
            opens = Site(workdir, {**site.switches, "MCP_TEST_RATELIMIT_FAIL_OPEN": "1"}, seed=site.seed)
            with site.serve("a", "b") as (a, b), opens.serve("fail-open") as (fail_open,):
                yield Outage(server, site, a, b, fail_open)
        finally:
            if not server.running:
                server.start()  # its keys are removed next


@asynccontextmanager
async def redis_down(outage: Outage, kill: bool = False) -> AsyncIterator[None]:
    """Redis stopped (killed, as a crash, when ``kill``) for the block, started again on its port after it."""
    await asyncio.to_thread(outage.redis.stop, kill)
    try:
        yield
    finally:
        await asyncio.to_thread(outage.redis.start)


@asynccontextmanager
async def sdk_session(
    server: ServerProcess, token: str, hooks: dict[str, Any] | None = None, **options: Any
) -> AsyncIterator[Client]:
    """The official SDK's client in a legacy Streamable HTTP session on the server's /mcp."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT, event_hooks=hooks)
    transport = streamable_http_client(server.url("/mcp"), http_client=http)
    async with http, Client(transport, mode="legacy", **options) as client:
        yield client


async def add(client: MCPWebSocket) -> dict[str, Any]:
    reply = await client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    return dict(reply["result"])


def health(server: ServerProcess) -> tuple[int, Any]:
    reply = httpx.get(server.url("/mcp/health"), timeout=TIMEOUT)
    return reply.status_code, reply.json()


async def health_becomes(server: ServerProcess, expected: dict[str, Any]) -> tuple[int, Any]:
    """The health answer once it is ``expected`` (answers are shared for a second), or the last one seen."""
    deadline = time.monotonic() + TIMEOUT
    answer = await asyncio.to_thread(health, server)
    while answer[1] != expected and time.monotonic() < deadline:
        await asyncio.sleep(0.2)  # no event tells when the shared answer expires: poll, bounded
        answer = await asyncio.to_thread(health, server)
    return answer


async def hubs_joined(outage: Outage, count: int) -> int:
    """The number of hubs in the group once it reaches ``count`` (they rejoin with a pause of up to 2 s)."""
    deadline = time.monotonic() + TIMEOUT
    members = await asyncio.to_thread(outage.hub_members)
    while members < count and time.monotonic() < deadline:
        await asyncio.sleep(0.1)  # no event tells when another process has joined: poll, bounded
        members = await asyncio.to_thread(outage.hub_members)
    return members


async def test_while_redis_is_down_sessions_stay_open_and_rate_limited_calls_are_refused_in_band(outage: Outage):
    async with mcp_websocket(outage.a.ws_url(), outage.token) as ws, sdk_session(outage.b, outage.token) as http:
        await ws.initialize(LATEST)
        before = await add(ws)
        tools_before, _pages = await ws.list_tools()

        async with redis_down(outage):
            on_ws = await add(ws)
            on_http = await asyncio.wait_for(http.call_tool("add", {"a": 2, "b": 3}), TIMEOUT)
            tools_while_down, _pages = await ws.list_tools()
            listed_over_http = await asyncio.wait_for(http.list_tools(cache_mode="bypass"), TIMEOUT)
        recorded = await outage.mutate("last-call", "add")

    assert before["structuredContent"] == {"result": 5}
    [block] = on_ws["content"]
    assert UNAVAILABLE.fullmatch(block["text"]), on_ws
    assert on_ws == {"content": [block], "isError": True}
    assert on_http.is_error
    [http_block] = on_http.content
    assert isinstance(http_block, types.TextContent)
    assert UNAVAILABLE.fullmatch(http_block.text), on_http
    assert tools_while_down == tools_before
    assert {tool.name for tool in listed_over_http.tools} >= {"add"}
    assert recorded["outcome"] == "rate_limited"


async def test_with_rate_limits_failing_open_calls_are_answered_while_redis_is_down(outage: Outage):
    # The session opens while Redis is down: its worker starts listening for changes without the layer.
    async with redis_down(outage, kill=True), mcp_websocket(outage.fail_open.ws_url(), outage.token) as ws:
        await ws.initialize(LATEST)
        answered = [await add(ws) for _ in range(3)]

    assert [result["structuredContent"] for result in answered] == [{"result": 5}] * 3
    assert all(not result["isError"] for result in answered)


async def test_an_admin_change_saved_while_redis_is_down_reaches_every_session_by_polling(outage: Outage):
    notifications: asyncio.Queue[Any] = asyncio.Queue()
    stream_open = asyncio.Event()

    async def on_message(message: Any) -> None:
        await notifications.put(message)

    async def on_response(response: httpx2.Response) -> None:
        # The server subscribes before it answers the GET, so a change after this is delivered.
        if response.request.method == "GET" and response.status_code == 200:
            stream_open.set()

    async with (
        mcp_websocket(outage.a.ws_url(), outage.token) as ws,
        sdk_session(outage.b, outage.token, {"response": [on_response]}, message_handler=on_message) as http,
        AdminClient(outage.b.base_url) as admin,
    ):
        await ws.initialize(LATEST)
        await admin.login(**outage.site.seeded.admin)
        await asyncio.wait_for(http.list_tools(cache_mode="bypass"), TIMEOUT)
        await asyncio.wait_for(stream_open.wait(), TIMEOUT)
        async with (
            redis_down(outage),
            stdio_session(outage.site.env, outage.site.seeded.user, LATEST) as stdio,  # started without Redis
        ):
            # The save succeeds (the admin client asserts it) though its announcement cannot be sent.
            await admin.action(TOOL_ADMIN, "disable_tools", [outage.site.seeded.tools["whoami"]])
            try:
                heard_on_ws = await ws.next_notification(LIST_CHANGED)
                heard_over_http = await asyncio.wait_for(notifications.get(), TIMEOUT)
                heard_on_stdio = await next_message(stdio, LIST_CHANGED)
                tools, _pages = await ws.list_tools()
            finally:
                await outage.mutate("enable", "whoami")

    assert heard_on_ws == {"jsonrpc": "2.0", "method": LIST_CHANGED}
    assert heard_over_http == types.ToolListChangedNotification(method=LIST_CHANGED)
    assert heard_on_stdio == {"jsonrpc": "2.0", "method": LIST_CHANGED}
    assert "whoami" not in {tool["name"] for tool in tools}


async def test_health_is_degraded_while_redis_is_down_and_ok_once_it_is_back(outage: Outage):
    async with redis_down(outage):
        down = await health_becomes(outage.a, DEGRADED)
    back = await health_becomes(outage.a, HEALTHY)

    assert down == (200, DEGRADED)
    assert back == (200, HEALTHY)


async def test_once_redis_is_back_changes_and_revocations_cross_processes_again_without_a_restart(outage: Outage):
    token = await outage.mutate("issue", outage.site.seeded.user)
    async with mcp_websocket(outage.a.ws_url(), outage.token) as on_a, mcp_websocket(outage.b.ws_url(), token) as on_b:
        await on_a.initialize(LATEST)
        await on_b.initialize(LATEST)
        joined = await hubs_joined(outage, 2)
        async with redis_down(outage, kill=True):
            assert (await add(on_b))["isError"]  # the outage is seen
        rejoined = await hubs_joined(outage, joined)

        await outage.mutate("disable", "whoami")
        try:
            heard = await on_a.next_notification(LIST_CHANGED)
        finally:
            await outage.mutate("enable", "whoami")
        await outage.mutate("revoke", token)
        closed = await websocket_closed(on_b, TIMEOUT)

    assert rejoined >= joined >= 2
    assert heard == {"jsonrpc": "2.0", "method": LIST_CHANGED}
    assert closed == (CLOSE_UNAUTHENTICATED, TOKEN_REVOKED)

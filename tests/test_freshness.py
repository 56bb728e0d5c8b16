"""Changes made in a second process bind the open clients of a running server within the stated bound.

Each test runs twice: on a one-process site with the in-memory channel layer (the server learns of changes
only by reading the change counters, so the bound is FRESHNESS_SECONDS) and on a site with the Redis layer
(the bound is set far beyond the wait, so only the group event can deliver in time). The second process
is ``python -m tests.live.mutate``, as ``manage.py shell`` would be; the clients are a real WebSocket, a
2026-07-28 ``subscriptions/listen`` stream, a legacy GET stream and ``mcp_stdio`` processes; the credentials
are the site's own tokens and OAuth access tokens.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from mcp_tools.access.credentials import TOKEN_EXPIRED, TOKEN_REVOKED, USER_INACTIVE
from mcp_tools.transports.websocket import CLOSE_UNAUTHENTICATED
from tests.challenges import refused_token
from tests.live import services
from tests.live.asgi_http import (
    ACCEPT_BOTH,
    initialize_params,
    modern_headers,
    modern_request,
    request,
)
from tests.live.servers import ServerProcess
from tests.live.sites import Site, shared_switches, sqlite_switches
from tests.live.sse import EventReader
from tests.live.stdio_client import next_message, stdio_session
from tests.live.websocket_client import mcp_websocket, websocket_closed

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

LATEST = "2025-11-25"
LIST_CHANGED = "notifications/tools/list_changed"
# Time for a loaded machine to run the server's side of a change once it is due.
MARGIN = 4.0
POLLED_BOUND = 2.0  # FRESHNESS_SECONDS of the in-memory site
UNREACHABLE_BOUND = 3600.0  # FRESHNESS_SECONDS of the Redis site: its polls never come in time


@dataclass
class Shape:
    """A deployment shape: its site, its running server, and how long a change may take to bind."""

    name: str
    site: Site
    server: ServerProcess
    bound: float

    @property
    def wait(self) -> float:
        return (self.bound if self.name == "memory" else 0.0) + MARGIN

    async def mutate(self, *args: str) -> Any:
        """Run one change in a process of its own; returns once it has committed."""
        completed = await asyncio.to_thread(self.site.run, "-m", "tests.live.mutate", *args)
        return json.loads(completed.stdout)


@pytest.fixture(scope="module", params=["memory", "redis"])
def shape(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shape]:
    workdir = tmp_path_factory.mktemp(f"freshness-{request.param}")
    # Remembered tokens would otherwise hide a revocation for a minute: the change must clear them.
    tuning = {"MCP_TEST_TOKEN_CACHE_SECONDS": "60"}
    if request.param == "memory":
        site = Site(workdir, {**sqlite_switches(workdir), **tuning, "MCP_TEST_FRESHNESS_SECONDS": str(POLLED_BOUND)})
        site.prepare()
        with site.serve("server") as (server,):
            yield Shape("memory", site, server, POLLED_BOUND)
        return
    with shared_switches(workdir, services.redis_url(), services.postgres_url()) as switches:
        site = Site(workdir, {**switches, **tuning, "MCP_TEST_FRESHNESS_SECONDS": str(UNREACHABLE_BOUND)})
        site.prepare()
        with site.serve("server") as (server,):
            yield Shape("redis", site, server, UNREACHABLE_BOUND)


# Clients -----------------------------------------------------------------------------------------


def http_client(token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT_BOTH}, timeout=MARGIN * 3)


async def stateless(shape: Shape, token: str, request_id: int, method: str, **params: Any) -> httpx.Response:
    async with http_client(token) as http:
        return await http.post(
            shape.server.url("/mcp"), json=modern_request(request_id, method, params), headers=modern_headers(method)
        )


async def tool_names(shape: Shape, token: str) -> set[str]:
    """Every tool a 2026-07-28 request lists now (following cursors)."""
    names: set[str] = set()
    cursor: str | None = None
    while True:
        reply = await stateless(shape, token, 1, "tools/list", **({"cursor": cursor} if cursor else {}))
        assert reply.status_code == 200, reply.text
        result = reply.json()["result"]
        names |= {tool["name"] for tool in result["tools"]}
        cursor = result.get("nextCursor")
        if cursor is None:
            return names


@asynccontextmanager
async def listening(shape: Shape, token: str) -> AsyncIterator[EventReader]:
    """An acknowledged 2026-07-28 listen stream for tool list changes."""
    body = modern_request(7, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    async with (
        http_client(token) as http,
        http.stream(
            "POST", shape.server.url("/mcp"), json=body, headers=modern_headers("subscriptions/listen")
        ) as response,
    ):
        assert response.status_code == 200
        reader = EventReader(response.aiter_text())
        acknowledged = await asyncio.wait_for(reader.message(), MARGIN)
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        yield reader


@asynccontextmanager
async def legacy_stream(shape: Shape, token: str) -> AsyncIterator[EventReader]:
    """A legacy session's GET stream, open once this yields."""
    async with http_client(token) as http:
        reply = await http.post(shape.server.url("/mcp"), json=request(0, "initialize", initialize_params(LATEST)))
        assert reply.status_code == 200, reply.text
        headers = {"Mcp-Session-Id": reply.headers["Mcp-Session-Id"], "MCP-Protocol-Version": LATEST}
        async with http.stream("GET", shape.server.url("/mcp"), headers=headers) as response:
            assert response.status_code == 200
            yield EventReader(response.aiter_text())


async def stream_ends(reader: EventReader, wait: float) -> list[Any]:
    """Every message until the server ends the stream (which must happen within ``wait``)."""
    found: list[Any] = []
    async with asyncio.timeout(wait):
        try:
            while True:
                found.append(await reader.message())
        except (StopAsyncIteration, httpx.RemoteProtocolError, EOFError):
            return found


# Tests -------------------------------------------------------------------------------------------


async def test_a_tool_disabled_in_another_process_leaves_every_open_client_within_the_bound(shape: Shape):
    token = shape.site.seeded.token
    async with (
        mcp_websocket(shape.server.ws_url(), token) as ws,
        listening(shape, token) as listen,
        legacy_stream(shape, token) as stream,
        stdio_session(shape.site.env, shape.site.seeded.user, LATEST) as stdio,
    ):
        await ws.initialize(LATEST)
        assert "greet" in await tool_names(shape, token)

        await shape.mutate("disable", "greet")

        async with asyncio.timeout(shape.wait):
            heard = await asyncio.gather(
                ws.next_notification(LIST_CHANGED),
                listen.message(),
                stream.message(),
                next_message(stdio, LIST_CHANGED, shape.wait),
            )
        assert [message["method"] for message in heard] == [LIST_CHANGED] * 4
        assert "greet" not in await tool_names(shape, token)
        called = await ws.request("tools/call", {"name": "greet", "arguments": {"name": "x"}})
        assert called["error"]["message"] == "Unknown tool: greet"


async def test_a_grant_removed_in_another_process_hides_the_tool_from_open_clients_within_the_bound(shape: Shape):
    token, user = shape.site.seeded.token, shape.site.seeded.user
    await shape.mutate("restrict", "multiply", user)
    async with mcp_websocket(shape.server.ws_url(), token) as ws, listening(shape, token) as listen:
        await ws.initialize(LATEST)
        assert "multiply" in await tool_names(shape, token)

        await shape.mutate("ungrant", "multiply", user)

        async with asyncio.timeout(shape.wait):
            heard = await asyncio.gather(ws.next_notification(LIST_CHANGED), listen.message())
        assert [message["method"] for message in heard] == [LIST_CHANGED] * 2
        assert "multiply" not in await tool_names(shape, token)


@pytest.mark.parametrize(("action", "reason"), [("revoke", TOKEN_REVOKED), ("expire", TOKEN_EXPIRED)])
async def test_a_token_revoked_or_expired_in_another_process_ends_its_connections_and_its_next_request(
    shape: Shape, action: str, reason: str
):
    token = await shape.mutate("issue", shape.site.seeded.user)
    # A request just made leaves the token remembered for a minute; the change must clear that memory.
    assert "add" in await tool_names(shape, token)
    async with (
        mcp_websocket(shape.server.ws_url(), token) as ws,
        listening(shape, token) as listen,
        legacy_stream(shape, token) as stream,
    ):
        await ws.initialize(LATEST)

        await shape.mutate(action, token)

        closed, listened, streamed = await asyncio.gather(
            websocket_closed(ws, shape.wait), stream_ends(listen, shape.wait), stream_ends(stream, shape.wait)
        )
        assert closed == (CLOSE_UNAUTHENTICATED, reason)
        assert (listened, streamed) == ([], [])
    refused = await stateless(shape, token, 2, "tools/list")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == refused_token(origin=shape.server.url(""))


@pytest.mark.parametrize(("action", "reason"), [("revoke-oauth", TOKEN_REVOKED), ("expire-oauth", TOKEN_EXPIRED)])
async def test_an_oauth_token_deleted_or_expired_in_another_process_ends_its_connections_and_its_next_request(
    shape: Shape, action: str, reason: str
):
    token = await shape.mutate("issue-oauth", shape.site.seeded.user, shape.server.url("/mcp"))
    # A request just made leaves the token remembered for a minute; the change must clear that memory.
    assert "add" in await tool_names(shape, token)
    async with mcp_websocket(shape.server.ws_url(), token) as ws, listening(shape, token) as listen:
        await ws.initialize(LATEST)

        await shape.mutate(action, token)

        closed, listened = await asyncio.gather(websocket_closed(ws, shape.wait), stream_ends(listen, shape.wait))
        assert closed == (CLOSE_UNAUTHENTICATED, reason)
        assert listened == []
    refused = await stateless(shape, token, 2, "tools/list")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == refused_token(origin=shape.server.url(""))


async def test_a_user_deactivated_in_another_process_loses_their_websocket_and_stdio_sessions(shape: Shape):
    name = f"dora_{shape.name}"
    await shape.mutate("user", name)
    token = await shape.mutate("issue", name)
    async with (
        mcp_websocket(shape.server.ws_url(), token) as ws,
        stdio_session(shape.site.env, name, LATEST, stderr=asyncio.subprocess.PIPE) as stdio,
    ):
        await ws.initialize(LATEST)

        await shape.mutate("deactivate", name)

        closed = await websocket_closed(ws, shape.wait)
        assert closed == (CLOSE_UNAUTHENTICATED, USER_INACTIVE)
        assert await asyncio.wait_for(stdio.wait(), shape.wait) == 1
        assert stdio.stderr is not None
        assert f"Session ended: {USER_INACTIVE}" in (await stdio.stderr.read()).decode()
    refused = await stateless(shape, token, 3, "tools/list")
    assert refused.status_code == 401

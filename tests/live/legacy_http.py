"""A legacy Streamable HTTP session over real HTTP (httpx) whose requests may go to any live server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from tests.live.asgi_http import ACCEPT_BOTH, initialize_params, notification, request
from tests.live.servers import ServerProcess
from tests.live.sse import EventReader

TIMEOUT = 10
LATEST = "2025-11-25"
PROGRESS = "notifications/progress"


class LegacySession:
    """One legacy Streamable HTTP session whose requests may go to any of the processes."""

    def __init__(self, token: str) -> None:
        self.http = httpx.AsyncClient(
            headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT_BOTH}, timeout=TIMEOUT
        )
        self.session_id = ""

    @property
    def headers(self) -> dict[str, str]:
        return {"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": LATEST}

    async def initialize(self, server: ServerProcess) -> None:
        reply = await self.http.post(server.url("/mcp"), json=request(0, "initialize", initialize_params(LATEST)))
        assert reply.status_code == 200, reply.text
        self.session_id = reply.headers["Mcp-Session-Id"]

    async def post(self, server: ServerProcess, message: Any) -> httpx.Response:
        return await self.http.post(server.url("/mcp"), json=message, headers=self.headers)

    async def cancel(self, server: ServerProcess, request_id: Any) -> httpx.Response:
        """Post ``notifications/cancelled`` for ``request_id``."""
        return await self.post(server, notification("notifications/cancelled", {"requestId": request_id}))

    async def delete(self, server: ServerProcess) -> httpx.Response:
        return await self.http.delete(server.url("/mcp"), headers=self.headers)

    @asynccontextmanager
    async def get_stream(self, server: ServerProcess) -> AsyncIterator[EventReader]:
        """The session's GET stream, open (and so subscribed) once this yields."""
        async with self.http.stream("GET", server.url("/mcp"), headers=self.headers) as response:
            assert (response.status_code, response.headers["content-type"]) == (200, "text/event-stream")
            yield EventReader(response.aiter_text())

    @asynccontextmanager
    async def call_stream(
        self, server: ServerProcess, request_id: Any, name: str, arguments: dict[str, Any]
    ) -> AsyncIterator[EventReader]:
        """A tools/call that reports progress, answered as an event stream, open once this yields."""
        params = {"name": name, "arguments": arguments, "_meta": {"progressToken": f"progress-{request_id}"}}
        body = request(request_id, "tools/call", params)
        async with self.http.stream("POST", server.url("/mcp"), json=body, headers=self.headers) as response:
            assert (response.status_code, response.headers["content-type"]) == (200, "text/event-stream")
            yield EventReader(response.aiter_text())

    async def aclose(self) -> None:
        await self.http.aclose()


@asynccontextmanager
async def legacy_session(token: str, server: ServerProcess) -> AsyncIterator[LegacySession]:
    session = LegacySession(token)
    try:
        await session.initialize(server)
        yield session
    finally:
        await session.aclose()


async def first_step(reader: EventReader, request_id: Any) -> None:
    """Wait for the call's first progress report: from then on it is running in its process."""
    progress = await asyncio.wait_for(reader.message(), TIMEOUT)
    assert progress["method"] == PROGRESS, progress
    assert progress["params"]["progressToken"] == f"progress-{request_id}"


async def stream_end(reader: EventReader) -> list[Any]:
    """The messages left on a stream until the server ends it (none for a cancelled call or ended stream)."""
    left: list[Any] = []
    async with asyncio.timeout(TIMEOUT):
        while True:
            try:
                left.append(await reader.message())
            except StopAsyncIteration:
                return left

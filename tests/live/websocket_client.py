"""An MCP client session over a real WebSocket (the ``websockets`` library); every wait is bounded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

TIMEOUT = 10
SUBPROTOCOL = "mcp"
CLIENT_INFO = {"name": "live-tests", "version": "1"}


class MCPWebSocket:
    """JSON-RPC requests and notifications over one connection; unsolicited messages are kept in order."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.next_id = 0
        self.unsolicited: list[Any] = []

    @property
    def subprotocol(self) -> str | None:
        return self.connection.subprotocol

    async def send(self, message: Any) -> None:
        await self.connection.send(json.dumps(message))

    async def _receive(self) -> Any:
        return json.loads(await self.connection.recv())

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its response; other messages arriving meanwhile are kept."""
        self.next_id += 1
        request_id = self.next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        try:
            async with asyncio.timeout(TIMEOUT):
                while True:
                    reply = await self._receive()
                    if isinstance(reply, dict) and reply.get("id") == request_id and "method" not in reply:
                        return reply
                    self.unsolicited.append(reply)
        except TimeoutError:
            raise AssertionError(f"No response to {method} within {TIMEOUT}s; got {self.unsolicited}") from None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def response(self, request_id: Any) -> dict[str, Any]:
        """The response to a request sent earlier with :meth:`send`, already received or arriving within TIMEOUT."""
        for index, message in enumerate(self.unsolicited):
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return dict(self.unsolicited.pop(index))
        try:
            async with asyncio.timeout(TIMEOUT):
                while True:
                    message = await self._receive()
                    if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                        return message
                    self.unsolicited.append(message)
        except TimeoutError:
            raise AssertionError(f"No response to {request_id!r} within {TIMEOUT}s; got {self.unsolicited}") from None

    async def next_notification(self, method: str) -> dict[str, Any]:
        """The first notification named ``method``, already received or arriving within TIMEOUT."""
        for index, message in enumerate(self.unsolicited):
            if isinstance(message, dict) and message.get("method") == method:
                return dict(self.unsolicited.pop(index))
        try:
            async with asyncio.timeout(TIMEOUT):
                while True:
                    message = await self._receive()
                    if isinstance(message, dict) and message.get("method") == method:
                        return message
                    self.unsolicited.append(message)
        except TimeoutError:
            raise AssertionError(f"No {method} within {TIMEOUT}s; got {self.unsolicited}") from None

    async def initialize(
        self, version: Any = "2025-11-25", *, initialized: bool = True, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        reply = await self.request(
            "initialize", {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": CLIENT_INFO}
        )
        if initialized:
            await self.notify("notifications/initialized")
        return reply

    async def list_tools(self) -> tuple[list[dict[str, Any]], int]:
        """Every tool, following ``nextCursor``; returns the tools and the number of pages."""
        tools: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        pages = 0
        while True:
            reply = await self.request("tools/list", params)
            assert "result" in reply, reply
            pages += 1
            tools.extend(reply["result"]["tools"])
            cursor = reply["result"].get("nextCursor")
            if cursor is None:
                return tools, pages
            params = {"cursor": cursor}


@asynccontextmanager
async def mcp_websocket(url: str, token: str | None = None, **options: Any) -> AsyncIterator[MCPWebSocket]:
    """Connect offering subprotocol ``mcp``, with a bearer token when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with connect(
        url,
        subprotocols=[SUBPROTOCOL],
        additional_headers=headers,
        open_timeout=TIMEOUT,
        close_timeout=TIMEOUT,
        **options,
    ) as connection:
        yield MCPWebSocket(connection)


async def websocket_closed(client: MCPWebSocket, wait: float) -> tuple[int | None, str | None]:
    """The close code and reason, once the server closes the connection (within ``wait``)."""
    async with asyncio.timeout(wait):
        try:
            while True:
                await client.connection.recv()
        except ConnectionClosed as closed:
            received = closed.rcvd
            return (received.code, received.reason) if received is not None else (None, None)

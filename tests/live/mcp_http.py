"""An MCP session over Streamable HTTP in process, with ``MCPWebSocket``'s interface, so that one test body drives
either transport; list_changed is heard on the session's GET stream where the door can hold one."""

from __future__ import annotations

from typing import Any

from tests.http_doors import streams
from tests.live.asgi_http import HttpClient, OpenResponse, notification, request
from tests.live.websocket_client import MCPWebSocket


class MCPHttp:
    """Requests numbered as ``MCPWebSocket`` numbers them, each answered whole; notifications from the stream."""

    def __init__(self, client: HttpClient) -> None:
        self.client = client
        self.next_id = 0
        self.stream: OpenResponse | None = None

    @property
    def hears(self) -> bool:
        """Whether the session hears list_changed: a WSGI door holds no stream, so its clients list again."""
        return self.stream is not None

    async def initialize(self, version: str) -> None:
        await self.client.initialize(version)
        reply = await self.client.send(notification("notifications/initialized"))
        assert reply.status == 202, reply
        if streams(self.client.door):
            self.stream = await self.client.open(method="GET")
            assert self.stream.status == 200, self.stream

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        reply = await self.client.send(request(self.next_id, method, params))
        assert reply.status == 200, reply
        return dict(reply.json())

    async def next_notification(self, method: str) -> dict[str, Any]:
        assert self.stream is not None, "this door holds no stream"
        message = await self.stream.message()
        assert message.get("method") == method, message
        return dict(message)

    async def quiet(self) -> bool:
        """Whether nothing more was said on the stream (a short bounded look)."""
        return self.stream is None or await self.stream.nothing_more()

    list_tools = MCPWebSocket.list_tools

    async def close(self) -> None:
        await self.client.close()

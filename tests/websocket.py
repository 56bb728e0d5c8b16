"""A JSON-RPC client over Channels' WebsocketCommunicator, the handshakes that open it, and the frames it reads.

Every wait is bounded by ``TIMEOUT``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from channels.testing import WebsocketCommunicator
from django.test import Client

from tests.messages import LIST_CHANGED

TIMEOUT = 5
HOST = (b"host", b"testserver")

# Opens a handshake on /mcp/ws: (headers, subprotocols) -> (communicator, accepted, subprotocol or close code).
Connect = Callable[..., Awaitable[tuple[WebsocketCommunicator, bool, Any]]]


class WSClient:
    """A JSON-RPC client over Channels' WebsocketCommunicator."""

    def __init__(self, communicator: WebsocketCommunicator) -> None:
        self.communicator = communicator
        self.next_id = 0

    async def send(self, message: Any) -> None:
        await self.communicator.send_to(text_data=json.dumps(message))

    async def receive(self) -> Any:
        return json.loads(await self.communicator.receive_from(timeout=TIMEOUT))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while True:
            reply = await self.receive()
            if isinstance(reply, dict) and reply.get("id") == self.next_id:
                return reply

    async def initialize(self, version: Any = "2025-11-25") -> dict[str, Any]:
        reply = await self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply


def ws_headers(token: str | None) -> list[tuple[bytes, bytes]]:
    headers = [(b"host", b"testserver")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    return headers


def login_cookie(user: Any) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def whoami(communicator: WebsocketCommunicator) -> Any:
    client = WSClient(communicator)
    await client.initialize()
    reply = await client.request("tools/call", {"name": "whoami"})
    return reply["result"]["structuredContent"]


async def denial(headers: list[tuple[bytes, bytes]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The HTTP denial response of a handshake on a server that supports ``websocket.http.response``."""
    from tests.asgi import application

    communicator = WebsocketCommunicator(application, "/mcp/ws", headers=headers, subprotocols=["mcp"])
    communicator.scope["extensions"] = {"websocket.http.response": {}}
    try:
        await communicator.send_input({"type": "websocket.connect"})
        start = await communicator.receive_output(timeout=TIMEOUT)
        body = await communicator.receive_output(timeout=TIMEOUT)
    finally:
        await communicator.disconnect(timeout=TIMEOUT)
    return start, body


async def listed(client: WSClient) -> dict[str, dict[str, Any]]:
    """Every tool of every page by name; each answer must be the very next frame the session sends."""
    tools: dict[str, dict[str, Any]] = {}
    cursor = None
    while True:
        client.next_id += 1
        params = {} if cursor is None else {"cursor": cursor}
        await client.send({"jsonrpc": "2.0", "id": client.next_id, "method": "tools/list", "params": params})
        reply = await client.receive()
        assert reply.get("id") == client.next_id, reply
        tools |= {tool["name"]: tool for tool in reply["result"]["tools"]}
        cursor = reply["result"].get("nextCursor")
        if cursor is None:
            return tools


async def heard_once(client: WSClient) -> dict[str, dict[str, Any]]:
    """Assert that exactly one list_changed arrives next; return the tools/list that follows it."""
    assert await client.receive() == LIST_CHANGED
    return await listed(client)


async def pong(client: WSClient) -> dict[str, Any]:
    """Ping and return the next frame, which must be the answer when nothing else was pending."""
    await client.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
    return await client.receive()

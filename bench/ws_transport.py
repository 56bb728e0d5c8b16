"""MCP over WebSocket: subprotocol `mcp`, one JSON-RPC message per text frame."""

from __future__ import annotations

import json
import sys

from rpc import (
    JsonObject,
    SessionOptions,
    TransportError,
    initialize_params,
    is_notification,
    is_response,
    listen_params,
    notification_message,
    request_message,
    result_of,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException
from websockets.typing import Subprotocol

MCP_SUBPROTOCOL = Subprotocol("mcp")
MAX_MESSAGE = 64 * 1024 * 1024
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


class WebSocketTransport:
    """One WebSocket connection; requests are sequential, so the caller's task reads its own replies."""

    def __init__(self, options: SessionOptions) -> None:
        self.options = options
        self.protocol_version = options.protocol_version
        self._socket: ClientConnection | None = None
        self._last_id = 0

    async def connect(self) -> None:
        try:
            self._socket = await connect(
                self.options.url,
                subprotocols=[MCP_SUBPROTOCOL],
                additional_headers=self.options.auth_headers(),
                max_size=MAX_MESSAGE,
                compression=None,
                ping_interval=None,
                open_timeout=self.options.timeout,
                close_timeout=1,
            )
        except (OSError, WebSocketException) as exc:
            raise TransportError(f"WebSocket handshake failed: {exc}") from exc
        if self._socket.subprotocol != MCP_SUBPROTOCOL:
            print("warning: server did not echo the 'mcp' subprotocol", file=sys.stderr)
        if not self.options.modern:
            await self._handshake()

    async def _handshake(self) -> None:
        result = await self.request("initialize", initialize_params(self.options))
        self.protocol_version = str(result.get("protocolVersion", self.protocol_version))
        await self._send(notification_message("notifications/initialized"))

    async def request(self, method: str, params: JsonObject) -> JsonObject:
        self._last_id += 1
        request_id = self._last_id
        await self._send(request_message(request_id, method, params, self.options))
        while True:
            message = await self._receive()
            if is_response(message, request_id):
                return result_of(message)

    async def listen(self) -> None:
        if not self.options.modern:
            return
        self._last_id += 1
        await self._send(request_message(self._last_id, "subscriptions/listen", listen_params(), self.options))
        await self.notification(ACKNOWLEDGED)

    async def notification(self, method: str) -> JsonObject:
        while True:
            message = await self._receive()
            if is_notification(message, method):
                return message

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()

    async def _send(self, message: JsonObject) -> None:
        try:
            await self._connected().send(json.dumps(message))
        except WebSocketException as exc:
            raise TransportError(f"WebSocket send failed: {exc}") from exc

    async def _receive(self) -> object:
        try:
            frame = await self._connected().recv()
        except WebSocketException as exc:
            raise TransportError(f"WebSocket closed: {exc}") from exc
        try:
            return json.loads(frame)
        except ValueError as exc:
            raise TransportError(f"frame is not JSON: {frame[:200]!r}") from exc

    def _connected(self) -> ClientConnection:
        if self._socket is None:
            raise TransportError("not connected")
        return self._socket

"""MCP over a WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp``."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import InvalidRequest
from mcp_tools.notify.hub import hub
from mcp_tools.protocol.errors import error_response
from mcp_tools.protocol.jsonrpc import encode
from mcp_tools.server.dispatch import server
from mcp_tools.server.session import Session
from mcp_tools.transports.admission import HANDSHAKE, Refused, admit, handshake
from mcp_tools.transports.channels_adapter import DirectDispatch
from mcp_tools.transports.outbox import Outbox

SUBPROTOCOL = "mcp"
# Closes a connection whose credentials stopped working (4000-4999 is the application's range; 401 echoes HTTP).
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_READING = 1008  # policy violation: the client leaves more than MAX_UNSENT_BYTES unread


_closing: set[asyncio.Task[None]] = set()


class MCPWebsocketConsumer(DirectDispatch, AsyncWebsocketConsumer):
    """Serves one MCP session per WebSocket connection; frames reach their handlers without a database hop."""

    # No channel per connection: change events reach sessions through this process's hub.
    channel_layer_alias = "mcp_tools.none"
    session: Session | None = None
    outbox: Outbox | None = None

    async def connect(self) -> None:
        try:
            admitted = await admit(handshake(self.scope), HANDSHAKE)
        except Refused as refusal:
            await self.refuse(refusal)
            return
        self.outbox = Outbox(self.send_text, limit=int(mcp_settings.MAX_UNSENT_BYTES), overflow=self.not_reading)
        self.session = Session(
            transport="websocket",
            user=admitted.user,
            token=admitted.token,
            emit=self.outbox.put,
            can_notify=True,
            can_ask=True,
        )
        self.session.on_end = self.cut_off
        self.session.respond = self.outbox.send
        await hub().add(self.session)
        offered = self.scope.get("subprotocols") or []
        await self.accept(SUBPROTOCOL if SUBPROTOCOL in offered else None)

    async def refuse(self, refusal: Refused) -> None:
        """Deny the handshake with the refusal's status, headers and error where the server supports it, else
        close (403)."""
        if "websocket.http.response" not in self.scope.get("extensions", {}):
            await self.close()
            return
        headers = [(b"content-type", b"application/json"), *refusal.headers]
        body = encode(error_response(None, refusal.error)).encode()
        await self.base_send({"type": "websocket.http.response.start", "status": refusal.status, "headers": headers})
        await self.base_send({"type": "websocket.http.response.body", "body": body})

    def not_reading(self) -> None:
        """Close a connection whose client leaves its answers unread while it keeps asking."""
        self._spawn(self.close(code=CLOSE_NOT_READING, reason="Too many unread messages"))

    def _spawn(self, closing: Any) -> None:
        task = asyncio.ensure_future(closing)
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    def cut_off(self, reason: str) -> None:
        """Close the connection because its credentials no longer work (revoked, expired, inactive user)."""
        self._spawn(self._close_after_pending(reason))

    async def _close_after_pending(self, reason: str) -> None:
        # What is already queued (the error answering the request that found the problem) goes out first.
        if self.outbox is not None:
            await self.outbox.drain()
            self.outbox.close()
        await self.close(code=CLOSE_UNAUTHENTICATED, reason=reason)

    async def send_text(self, text: str) -> None:
        # What ``self.send(text_data=text)`` sends, without its two layers of dispatch on every frame.
        await self.base_send({"type": "websocket.send", "text": text})

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.session is None:
            return
        if text_data is None:
            self.session.emit(error_response(None, InvalidRequest("Binary frames are not supported; send text")))
            return
        await server.receive(self.session, text_data)

    async def disconnect(self, code: int) -> None:
        if self.outbox is not None:
            self.outbox.close()
        if self.session is not None:
            hub().remove(self.session)
            # Cancelled calls still record themselves; the consumer ends once they have.
            await asyncio.gather(*self.session.close(), return_exceptions=True)

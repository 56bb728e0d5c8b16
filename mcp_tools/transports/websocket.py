"""MCP over a WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp``."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import InterfaceError, OperationalError

from mcp_tools.access import permissions
from mcp_tools.access.authentication import AuthenticationFailed, authenticate_anew, refusal_challenge
from mcp_tools.conf import mcp_settings
from mcp_tools.connections import connection_lost, log_lost
from mcp_tools.exceptions import DatabaseUnavailable, InvalidRequest, ProtocolError
from mcp_tools.notify.hub import hub
from mcp_tools.notify.listeners import too_many_connections
from mcp_tools.protocol.errors import error_response
from mcp_tools.protocol.jsonrpc import encode
from mcp_tools.server.dispatch import server
from mcp_tools.server.session import Session
from mcp_tools.transports.channels_adapter import DirectDispatch
from mcp_tools.transports.http_request import connection_request
from mcp_tools.transports.origins import connection_problem
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
            handshake = connection_request(self.scope)
        except InvalidRequest as exc:
            await self.refuse(400, exc.message)
            return
        problem = connection_problem(handshake)
        if problem is not None:
            await self.refuse(403, f"Invalid {problem.capitalize()} header")
            return
        try:
            user, token = await database_sync_to_async(authenticate_anew)(handshake)
        except AuthenticationFailed as exc:
            await self.refuse(exc.status, str(exc), refusal_challenge(handshake, exc))
            return
        except (OperationalError, InterfaceError) as exc:
            if not connection_lost(exc):
                raise
            log_lost(exc, "authenticating a WebSocket")
            await self.refuse(503, DatabaseUnavailable())
            return
        if not permissions.may_connect(user):
            await self.refuse(401, "Authentication required", refusal_challenge(handshake))
            return
        if not hub().admits(user):
            await self.refuse(429, too_many_connections())
            return
        self.outbox = Outbox(self.send_text, limit=int(mcp_settings.MAX_UNSENT_BYTES), overflow=self.not_reading)
        self.session = Session(
            transport="websocket",
            user=user,
            token=token,
            emit=self.outbox.put,
            can_notify=True,
        )
        self.session.on_end = self.cut_off
        self.session.respond = self.outbox.send
        await hub().add(self.session)
        offered = self.scope.get("subprotocols") or []
        await self.accept(SUBPROTOCOL if SUBPROTOCOL in offered else None)

    async def refuse(self, status: int, reason: str | ProtocolError, challenge: str = "") -> None:
        """Deny the handshake with an HTTP status where the server supports it, else close (403); the body is
        ``reason``'s error (a text: -32600)."""
        if "websocket.http.response" not in self.scope.get("extensions", {}):
            await self.close()
            return
        headers = [(b"content-type", b"application/json")]
        if challenge:
            headers.append((b"www-authenticate", challenge.encode("latin-1", "replace")))
        error = reason if isinstance(reason, ProtocolError) else InvalidRequest(reason)
        body = encode(error_response(None, error)).encode()
        await self.base_send({"type": "websocket.http.response.start", "status": status, "headers": headers})
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

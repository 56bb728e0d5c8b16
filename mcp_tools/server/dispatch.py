"""The MCP method table: each message to its handler, each failure to ``protocol.errors`` for its answer."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp_tools import __version__
from mcp_tools.access import permissions
from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import (
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ProtocolError,
    Unauthenticated,
)
from mcp_tools.protocol import jsonrpc, modern
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.errors import error_response, request_failure
from mcp_tools.protocol.jsonrpc import Invalid, Message, Notification, RawJSON, Request, Response
from mcp_tools.protocol.versions import Revision
from mcp_tools.server.calls import Call
from mcp_tools.server.listing import decode_cursor, encode_cursor, page
from mcp_tools.server.session import InFlight, Listen, Session
from mcp_tools.tools.catalog import catalog

logger = logging.getLogger("mcp_tools")

# Requests that may run long go to their own task so that cancellation and other requests proceed.
_CONCURRENT = frozenset({"tools/call", "subscriptions/listen"})
_MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})
_LEGACY_ONLY = frozenset({"initialize", "ping"})
# A batch is answered once every member is done, so a listen in one would hold the connection forever.
_NOT_IN_BATCHES = frozenset({"initialize", "subscriptions/listen"})


@dataclass(frozen=True, slots=True)
class Terms:
    """The terms a request is answered under: its revision and the capabilities its client declared."""

    revision: Revision
    client_capabilities: dict[str, Any]


Handler = Callable[[Session, Request, Terms], Awaitable[dict[str, Any]]]


def server_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": mcp_settings.SERVER_NAME,
        "version": mcp_settings.SERVER_VERSION or __version__,
    }
    if mcp_settings.SERVER_TITLE:
        info["title"] = mcp_settings.SERVER_TITLE
    if mcp_settings.WEBSITE_URL:
        info["websiteUrl"] = mcp_settings.WEBSITE_URL
    return info


def capabilities(session: Session) -> dict[str, Any]:
    return {"tools": {"listChanged": True} if session.can_notify else {}}


async def instructions_for(session: Session) -> str:
    """INSTRUCTIONS for this caller: withheld when they name a tool the caller may not list."""
    text = str(mcp_settings.INSTRUCTIONS or "")
    if not text:
        return ""
    snapshot = await catalog.get()
    named = snapshot.names_in(text)
    if named:
        await permissions.prepare(session.user)
        if not named <= session.view(snapshot).names:
            return ""
    return text


def batch_refusal(session: Session, items: list[Any]) -> str | None:
    """Why a batch is refused as a whole, or None."""
    if not items:
        return "Empty batch"
    if session.revision != v.V2025_03_26:
        return "Batches are not supported by the negotiated revision"
    limit = int(mcp_settings.MAX_BATCH_ITEMS)
    return f"Batch larger than {limit} messages" if len(items) > limit else None


def client_state(params: dict[str, Any], name: str) -> dict[str, Any]:
    """What a session keeps of ``params[name]`` (an object, else nothing); -32602 beyond MAX_CLIENT_STATE_BYTES."""
    value = params.get(name, {})
    if not isinstance(value, dict):
        return {}
    limit = int(mcp_settings.MAX_CLIENT_STATE_BYTES)
    # Refused rather than cut: a truncated capabilities object would claim less, or other, than the client has.
    if len(json.dumps(value, separators=(",", ":"))) > limit:
        raise InvalidParams(f"{name} is larger than {limit} bytes")
    return value


def too_many_requests() -> InvalidRequest:
    return InvalidRequest(f"Too many requests in progress (at most {mcp_settings.MAX_PENDING_REQUESTS})")


def spawn_refusal(session: Session, request: Request) -> ProtocolError | None:
    """Why a long-running request may not start on this session, or None."""
    if request.id in session.in_flight:
        return InvalidRequest(f"Request id {request.id!r} is already in use")
    if len(session.in_flight) >= int(mcp_settings.MAX_PENDING_REQUESTS):
        return too_many_requests()
    return None


def decode_message(text: str | bytes) -> Any:
    """A received frame or body as JSON values, within MAX_MESSAGE_BYTES and MAX_DEPTH."""
    return jsonrpc.decode(text, max_bytes=int(mcp_settings.MAX_MESSAGE_BYTES), max_depth=int(mcp_settings.MAX_DEPTH))


class Server:
    """Dispatches decoded messages for a session; transports only move text in and out."""

    def __init__(self) -> None:
        self.methods: dict[str, Handler] = {
            "initialize": self.initialize,
            "ping": self.ping,
            "server/discover": self.discover,
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
            "subscriptions/listen": self.listen,
        }

    # Message stream entry (WebSocket, stdio) ---------------------------------------------------

    async def receive(self, session: Session, text: str | bytes) -> None:
        """Handle one frame: parse, dispatch, and emit every response on the session."""
        try:
            decoded = decode_message(text)
        except ProtocolError as exc:
            session.emit(error_response(None, exc))
            return
        if isinstance(decoded, list):
            await self.receive_batch(session, decoded)
            return
        message = jsonrpc.classify(decoded)
        if isinstance(message, Request) and message.method in _CONCURRENT:
            self._spawn(session, message)
            return
        response = await self.handle(session, message)
        if response is not None:
            session.emit(response)

    async def receive_batch(self, session: Session, items: list[Any]) -> None:
        """Handle a JSON array of messages; only the 2025-03-26 revision allows them, up to MAX_BATCH_ITEMS."""
        reason = batch_refusal(session, items)
        messages = [jsonrpc.classify(item) for item in items] if reason is None else []
        refused = next((m.method for m in messages if isinstance(m, Request) and m.method in _NOT_IN_BATCHES), None)
        if refused is not None:
            reason = f"{refused} must not be part of a batch"
        if reason is not None:
            session.emit(error_response(None, InvalidRequest(reason)))
            return
        results = await self._answer_members(session, messages)
        responses = [r for r in results if r is not None]
        if responses:
            session.emit(responses)

    async def _answer_members(self, session: Session, messages: list[Message]) -> list[dict[str, Any] | None]:
        """Answer the members of a batch side by side, starting one per turn of the event loop."""
        tasks: list[asyncio.Future[dict[str, Any] | None]] = []
        try:
            for message in messages:
                tasks.append(asyncio.ensure_future(self.handle(session, message)))
                # Members that never wait (ping, tools/list) would otherwise run back to back in one turn,
                # keeping every other connection of this process waiting until the whole batch is done.
                await asyncio.sleep(0)
            return list(await asyncio.gather(*tasks))
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            raise

    def _spawn(self, session: Session, request: Request) -> None:
        refusal = spawn_refusal(session, request)
        if refusal is not None:
            session.emit(error_response(request.id, refusal))
            return
        task = asyncio.ensure_future(self._run_spawned(session, request))
        session.in_flight[request.id] = InFlight(task)

    async def _run_spawned(self, session: Session, request: Request) -> None:
        try:
            response = await self.handle(session, request)
        finally:
            session.in_flight.pop(request.id, None)
        if response is None:
            return
        if session.respond is not None:
            await session.respond(response)
        else:
            session.emit(response)

    # Single message entry (all transports) -----------------------------------------------------

    async def handle(self, session: Session, message: Message) -> dict[str, Any] | None:
        """The response to one message, or None for notifications and client responses."""
        if isinstance(message, Invalid):
            return error_response(message.id, message.error)
        if isinstance(message, Notification):
            await self.notify(session, message)
            return None
        if isinstance(message, Response):
            # The answer to a question this session asked; one to no question here is dropped.
            if session.questions is not None:
                session.questions.answer(message)
            return None
        problem = session.credentials_problem()
        if problem is not None:
            # Expiry binds at the moment it passes, whichever comes first: this request or the hub's timer.
            session.end(problem)
            return error_response(message.id, Unauthenticated(problem))

        if message.method in _CONCURRENT and len(session.in_flight) > int(mcp_settings.MAX_PENDING_REQUESTS):
            # Over HTTP each POST of a session adds itself to the session's table before it gets here.
            return error_response(message.id, too_many_requests())
        try:
            terms = self.terms(session, message)
            result = await self.methods[message.method](session, message, terms)
        except Exception as exc:
            return request_failure(message.id, exc, message.method)
        if terms.revision.is_modern:
            result = dict(result)  # an Encoded result's text would no longer say what it holds
            result.setdefault("resultType", "complete")
            result.setdefault("_meta", {})[v.SERVER_INFO_META] = server_info()
        return jsonrpc.result(message.id, result)

    def terms(self, session: Session, request: Request) -> Terms:
        """The revision and client capabilities a request speaks with: its own ``_meta`` or the session's."""
        if v.is_modern_request(request.params) or request.method in _MODERN_ONLY:
            envelope = modern.envelope(request.params)
            revision = modern.revision(envelope.requested)
            if request.method in _LEGACY_ONLY or request.method not in self.methods:
                raise MethodNotFound(f"Method not found: {request.method}")
            return Terms(revision, envelope.capabilities)
        if request.method in _MODERN_ONLY or request.method not in self.methods:
            raise MethodNotFound(f"Method not found: {request.method}")
        if session.revision is None:
            if request.method == "ping":
                return Terms(v.LATEST_LEGACY, {})
            if request.method != "initialize":
                raise InvalidRequest("The session is not initialized: send initialize first")
            return Terms(v.LATEST_LEGACY, {})
        return Terms(session.revision, session.client_capabilities)

    async def notify(self, session: Session, message: Notification) -> None:
        if message.method == "notifications/cancelled":
            request_id = message.params.get("requestId")
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                reason = str(message.params.get("reason") or "")
                # A request of a legacy HTTP session may be running in another worker process.
                if not session.cancel(request_id, reason) and session.cancel_elsewhere is not None:
                    await session.cancel_elsewhere(request_id, reason)

    # Methods -----------------------------------------------------------------------------------

    async def initialize(self, session: Session, request: Request, terms: Terms) -> dict[str, Any]:
        if session.initialized:
            raise InvalidRequest("The session is already initialized")
        params = request.params
        requested = params.get("protocolVersion")
        negotiated = v.negotiate_legacy(requested)
        if negotiated is None:
            data = {"supported": v.supported_wire_values(), "requested": requested}
            raise InvalidParams("Unsupported protocol version", data)
        capabilities_ = client_state(params, "capabilities")
        client_info = client_state(params, "clientInfo")
        session.client_capabilities, session.client_info = capabilities_, client_info
        session.revision = negotiated
        result: dict[str, Any] = {
            "protocolVersion": negotiated.wire,
            "capabilities": capabilities(session),
            "serverInfo": self._legacy_server_info(negotiated),
        }
        instructions = await instructions_for(session)
        if instructions and negotiated >= v.V2024_11_05:
            result["instructions"] = instructions
        return result

    @staticmethod
    def _legacy_server_info(revision: Revision) -> dict[str, Any]:
        info = server_info()
        if revision < v.V2025_06_18:
            info.pop("title", None)
        if revision < v.V2025_11_25:
            info.pop("websiteUrl", None)
        return info

    async def ping(self, session: Session, request: Request, terms: Terms) -> dict[str, Any]:
        return {}

    async def discover(self, session: Session, request: Request, terms: Terms) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": v.supported_modern_values(),
            "capabilities": capabilities(session),
            "ttlMs": mcp_settings.LIST_TTL_MS,
            "cacheScope": "private",
        }
        instructions = await instructions_for(session)
        if instructions:
            result["instructions"] = instructions
        return result

    async def list_tools(self, session: Session, request: Request, terms: Terms) -> dict[str, Any]:
        revision = terms.revision
        snapshot = await catalog.get()
        await permissions.prepare(session.user)
        view = session.view(snapshot)
        visible = view.entries
        offset = decode_cursor(request.params.get("cursor"), len(visible))
        # The draft's tools/list takes no cursor, so draft clients get every tool at once.
        size = len(visible) or 1 if revision <= v.DRAFT else max(1, int(mcp_settings.PAGE_SIZE))
        tools, following = page(view, revision, offset, size)
        result: dict[str, Any] = {"tools": tools}
        if following < len(visible):
            result["nextCursor"] = encode_cursor(following)
        if revision.is_modern:
            result["ttlMs"] = mcp_settings.LIST_TTL_MS
            result["cacheScope"] = "private"
        return result

    async def call_tool(self, session: Session, request: Request, terms: Terms) -> dict[str, Any]:
        return await Call(session, request, terms.revision, terms.client_capabilities).answer()

    async def listen(self, session: Session, request: Request, terms: Terms) -> dict[str, Any]:
        wanted = request.params.get("notifications")
        if not isinstance(wanted, dict):
            raise InvalidParams('"notifications" must be an object')
        honoured = {"toolsListChanged": True} if wanted.get("toolsListChanged") and session.can_notify else {}
        listen = Listen(request.id, tools=bool(honoured))
        session.listens[request.id] = listen
        ack = {"notifications": honoured, "_meta": {v.SUBSCRIPTION_ID_META: request.id}}
        session.emit(jsonrpc.notification("notifications/subscriptions/acknowledged", ack))
        try:
            await listen.ended.wait()
        finally:
            session.listens.pop(request.id, None)
        return {"_meta": {v.SUBSCRIPTION_ID_META: request.id}}


server = Server()

__all__ = ["RawJSON", "Server", "server"]

"""Streamable HTTP at ``/mcp``: legacy sessions and stateless 2026-07-28 requests on one endpoint."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

from channels.consumer import AsyncConsumer

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import (
    DatabaseUnavailable,
    HeaderMismatch,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    MissingClientCapability,
    ParseError,
    ProtocolError,
    Unauthenticated,
    UnknownTool,
    UnsupportedProtocolVersion,
)
from mcp_tools.loops import first_done
from mcp_tools.notify.group import on_event
from mcp_tools.notify.hub import hub
from mcp_tools.protocol import jsonrpc, modern
from mcp_tools.protocol.jsonrpc import Notification, Request, Response
from mcp_tools.server.dispatch import server
from mcp_tools.server.session import InFlight, ListWatcher, Session
from mcp_tools.transports.admission import (
    REQUEST,
    Refused,
    admit,
    ensure_room,
    lapsed_challenge,
    unavailable_when_lost,
)
from mcp_tools.transports.http_request import HTTPError, HTTPRequest
from mcp_tools.transports.http_sessions import SESSION_ENDED, store
from mcp_tools.transports.sse import EventStream

SESSION_HEADER = b"mcp-session-id"
LEGACY_HEADER_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
JSON_HEADERS = [(b"content-type", b"application/json")]
# An initialize that created no session: the request could not be accepted (spec: an HTTP error status).
INITIALIZE_FAILED = 400
# Where the door cannot hold a response open (a WSGI worker), what needs one is refused at once, never held.
NO_STREAMS = (
    "This endpoint answers each request whole and holds no stream open: no GET stream, no subscriptions/listen. "
    "List changes are found by listing again."
)


# The HTTP status a 2026-07-28 response carries, by the kind of error it holds (PROTOCOL.md §3); a result,
# an unknown tool and an internal error are 200, the last two being answers the body already explains.
MODERN_STATUS: dict[type[ProtocolError], int] = {
    ParseError: 400,
    InvalidRequest: 400,
    MethodNotFound: 404,
    UnknownTool: 200,
    InvalidParams: 400,
    HeaderMismatch: 400,
    MissingClientCapability: 400,
    UnsupportedProtocolVersion: 400,
    Unauthenticated: 401,
    DatabaseUnavailable: 503,
}


def modern_status(response: dict[str, Any] | None) -> int:
    """The HTTP status of a 2026-07-28 response: the most specific entry for its error's kind."""
    kind = getattr(response, "kind", None)
    if kind is None:
        return 200
    return next((MODERN_STATUS[cls] for cls in kind.__mro__ if cls in MODERN_STATUS), 200)


class MCPHttpConsumer(AsyncConsumer):
    """Answers one HTTP request; streams SSE when a request reports progress or listens."""

    channel_layer_alias = "mcp_tools.none"  # change events arrive through the process hub instead

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        request = HTTPRequest(scope, receive, send)
        try:
            await self.serve_available(request)
        except HTTPError as exc:
            await request.respond(exc.status, jsonrpc.encode(exc.response).encode(), [*JSON_HEADERS, *exc.headers])

    async def serve_available(self, request: HTTPRequest) -> None:
        """``serve``; a 503 when the database is lost before the request reaches a method (credentials,
        sessions), as the methods themselves answer such a loss in JSON-RPC."""
        try:
            with unavailable_when_lost("before a request reached its method"):
                await self.serve(request)
        except Refused as refusal:
            raise refused(refusal) from None

    async def serve(self, request: HTTPRequest) -> None:
        admitted = await admit(request, REQUEST, prepare=lambda: self.before_credentials(request))
        user, token = admitted.user, admitted.token
        version = request.headers.get("MCP-Protocol-Version")
        if version is not None and version not in LEGACY_HEADER_VERSIONS:
            await self.serve_modern(request, user, token)
        else:
            await self.serve_legacy(request, user, token, version)

    @staticmethod
    async def before_credentials(request: HTTPRequest) -> None:
        """What admission lets a request do once its Host and Origin passed, before its credentials are read."""
        if mcp_settings.AUTHENTICATION_CLASSES:
            # DRF classes get the whole request, body included (a signed request needs it). Without them a
            # caller is known from headers alone, so a stranger is refused before any body is buffered.
            await request.read_body()
        # Changes made in other processes bind before this request's credentials and tools are looked at.
        await hub().ensure_fresh()

    # 2026-07-28 ---------------------------------------------------------------------------------

    async def serve_modern(self, request: HTTPRequest, user: Any, token: Any) -> None:
        if request.method != "POST":
            raise HTTPError(405, InvalidRequest("Use POST"), headers=[(b"allow", b"POST")])
        message = await request.json_message()
        if isinstance(message, Notification):
            self.check_modern_headers(request, message.method, message.params, None)
            await request.respond(202)
            return
        if not isinstance(message, Request):
            raise HTTPError(400, InvalidRequest("Body must be a single JSON-RPC request or notification"))
        self.check_modern_headers(request, message.method, message.params, message.id)
        if message.method == "subscriptions/listen":
            if not request.can_stream:
                raise HTTPError(404, MethodNotFound(NO_STREAMS), request_id=message.id)
            if not request.accepts_sse:
                raise HTTPError(
                    406, InvalidRequest("subscriptions/listen answers text/event-stream"), request_id=message.id
                )
            self.check_room(user, message.id)
        session = Session(transport="http", user=user, token=token, emit=_discard, can_notify=request.can_stream)
        await Exchange(request, session, message, modern=True).run()

    @staticmethod
    def check_room(user: Any, request_id: Any = None) -> None:
        """429 when the user already holds MAX_CONNECTIONS_PER_USER streams and sockets in this process."""
        try:
            ensure_room(user)
        except Refused as refusal:
            raise refused(refusal, request_id) from None

    def check_modern_headers(self, request: HTTPRequest, method: str, params: dict[str, Any], request_id: Any) -> None:
        """The ladder: envelope (-32602), then headers against the body (-32020), then version (-32022)."""
        try:
            envelope = modern.envelope(params)
            if request.duplicated_routing_header:
                raise HeaderMismatch(f"Duplicate {request.duplicated_routing_header} header")
            if request.headers.get("MCP-Protocol-Version") != envelope.requested:
                raise HeaderMismatch("MCP-Protocol-Version does not match _meta")
            if request.headers.get("Mcp-Method") != method:
                raise HeaderMismatch("Mcp-Method does not match the body's method")
            name = params.get("name")
            if method == "tools/call" and isinstance(name, str) and _strip(request.headers.get("Mcp-Name")) != name:
                raise HeaderMismatch("Mcp-Name does not match the body's tool name")
            modern.revision(envelope.requested)
        except ProtocolError as exc:
            raise HTTPError(400, exc, request_id=request_id) from None

    # Legacy era ---------------------------------------------------------------------------------

    async def serve_legacy(self, request: HTTPRequest, user: Any, token: Any, version: str | None) -> None:
        if request.method == "POST":
            await self.legacy_post(request, user, token, version)
        elif request.method == "GET" and not request.can_stream:
            raise HTTPError(405, InvalidRequest(NO_STREAMS), headers=[(b"allow", b"POST, DELETE")])
        elif request.method == "GET":
            await self.legacy_get(request, user, token)
        elif request.method == "DELETE":
            record = await self.legacy_session(request, user)
            await store.end(record.id)
            await request.respond(200)
        else:
            if request.can_stream:
                raise HTTPError(
                    405, InvalidRequest("Use POST, GET or DELETE"), headers=[(b"allow", b"GET, POST, DELETE")]
                )
            raise HTTPError(405, InvalidRequest("Use POST or DELETE"), headers=[(b"allow", b"POST, DELETE")])

    async def legacy_session(self, request: HTTPRequest, user: Any) -> Any:
        session_id = request.headers.get("Mcp-Session-Id")
        if not session_id:
            raise HTTPError(400, InvalidRequest("Missing Mcp-Session-Id header"))
        record = await store.get(session_id, user)
        if record is None:
            raise HTTPError(404, InvalidRequest("Session not found"))
        return record

    async def legacy_post(self, request: HTTPRequest, user: Any, token: Any, version: str | None) -> None:
        decoded = await request.json_body()
        message = None if isinstance(decoded, list) else jsonrpc.classify(decoded)
        if (
            isinstance(message, Request)
            and message.method == "initialize"
            and not request.headers.get("Mcp-Session-Id")
        ):
            await self.initialize(request, user, token, message)
            return
        record = await self.legacy_session(request, user)
        if version is not None and version != str(record.revision.wire):
            raise HTTPError(400, InvalidRequest(f"MCP-Protocol-Version must be {record.revision.wire}"))
        session = store.session_for(record, user=user, token=token, emit=_discard)
        if isinstance(decoded, list):
            await self.legacy_batch(request, session, decoded)
        elif isinstance(message, Request):
            if request.accepts_sse:
                # Its event stream can carry a question to the client, answered by a later POST.
                session.questions = store.questions(record.id)
            await Exchange(request, session, message, modern=False).run()
        elif isinstance(message, Response):
            await store.answer(record.id, message)
            await request.respond(202)
        else:
            if message is not None:
                response = await server.handle(session, message)
                if response is not None:  # a message that was neither request, notification nor response
                    await request.respond(400, jsonrpc.encode(response).encode(), JSON_HEADERS)
                    return
            await request.respond(202)

    async def initialize(self, request: HTTPRequest, user: Any, token: Any, message: Request) -> None:
        session = Session(transport="http", user=user, token=token, emit=_discard, can_notify=request.can_stream)
        response = await server.handle(session, message)
        headers = list(JSON_HEADERS)
        status = 200
        if response is not None and "result" in response:
            session.session_id = await store.create(session)
            headers.append((SESSION_HEADER, session.session_id.encode()))
        else:
            # No session was created: the request could not be accepted (an unsupported version, bad params).
            status = INITIALIZE_FAILED
        await request.respond(status, jsonrpc.encode(response).encode(), headers)

    async def legacy_batch(self, request: HTTPRequest, session: Session, items: list[Any]) -> None:
        messages: list[Any] = []
        session.emit = messages.append
        await server.receive_batch(session, items)
        # Progress of calls in a batch has no stream to travel on; the answer is the array (or the refusal).
        answers = [m for m in messages if isinstance(m, list) or "method" not in m]
        if not answers:
            await request.respond(202)
            return
        status = 400 if isinstance(answers[0], dict) else 200
        await request.respond(status, jsonrpc.encode(answers[0]).encode(), JSON_HEADERS)

    async def legacy_get(self, request: HTTPRequest, user: Any, token: Any) -> None:
        if not request.accepts_sse:
            raise HTTPError(406, InvalidRequest("GET opens a text/event-stream"))
        record = await self.legacy_session(request, user)
        self.check_room(user)
        stream = EventStream(request.send)
        listener = StreamListener(stream, user, token, record.id)
        await hub().add(listener)
        try:
            await stream.start(((SESSION_HEADER, record.id.encode()),))
            await listener.pump(request, keepalive=float(mcp_settings.SSE_KEEPALIVE_SECONDS))
        finally:
            hub().remove(listener)
            await stream.close()


class Exchange:
    """One request answered as JSON, or as an SSE stream once it emits notifications first."""

    def __init__(self, request: HTTPRequest, session: Session, message: Request, *, modern: bool) -> None:
        self.request, self.session, self.message, self.modern = request, session, message, modern
        # What the handler emitted and the stream has not sent yet; ``arrived`` wakes the stream.
        self.pending: deque[Any] = deque()
        self.arrived: asyncio.Future[None] | None = None
        session.emit = self._emit

    def _emit(self, message: Any) -> None:
        self.pending.append(message)
        if self.arrived is not None and not self.arrived.done():
            self.arrived.set_result(None)

    def _arrival(self) -> asyncio.Future[None]:
        """A future that completes once something is pending (at once when something already is)."""
        self.arrived = asyncio.get_running_loop().create_future()
        if self.pending:
            self.arrived.set_result(None)
        return self.arrived

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(SESSION_HEADER, self.session.session_id.encode())] if self.session.session_id else []

    async def run(self) -> None:
        listening = self.message.method == "subscriptions/listen"
        task = asyncio.ensure_future(server.handle(self.session, self.message))
        if listening:
            # A listen whose credentials stop working ends without a final result; the client's next
            # request is answered 401.
            self.session.on_end = lambda reason: task.cancel()
            await hub().add(self.session)
        self.session.in_flight[self.message.id] = InFlight(task)
        try:
            await self._answer(task)
        finally:
            task.cancel()
            self.session.in_flight.pop(self.message.id, None)
            store.release(self.session)
            if listening:
                hub().remove(self.session)

    async def _answer(self, task: asyncio.Task[Any]) -> None:
        watch = self.request.watch_disconnect()
        try:
            if not self.request.accepts_sse:
                await first_done(task, watch.gone)
                if task.done():
                    await self._respond_json(_response(task))
                return
            await first_done(task, self._arrival(), watch.gone)
            if not self.pending:
                if task.done():
                    await self._respond_json(_response(task))
                return
            await self._stream(task, watch.gone)
        finally:
            watch.stop()

    async def _respond_json(self, response: dict[str, Any] | None) -> None:
        if response is None:
            await self.request.respond(202, headers=self.headers())
            return
        status = modern_status(response) if self.modern else 200
        body = jsonrpc.encode(response).encode()
        # Credentials that stopped working mid-request: the client learns where to get new ones.
        challenge = lapsed_challenge(self.request) if status == 401 else []
        await self.request.respond(status, body, [*JSON_HEADERS, *self.headers(), *challenge])

    async def _stream(self, task: asyncio.Task[Any], gone: asyncio.Future[None]) -> None:
        stream = EventStream(self.request.send)
        await stream.start(tuple(self.headers()))
        keepalive = float(mcp_settings.SSE_KEEPALIVE_SECONDS)
        while True:
            while self.pending and not gone.done():
                await stream.message(self.pending.popleft())
            if task.done() or gone.done():
                break
            done, _ = await asyncio.wait(
                {task, self._arrival(), gone}, timeout=keepalive, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                await stream.comment()
        if gone.done():
            return
        while self.pending:
            await stream.message(self.pending.popleft())
        response = _response(task)
        if response is not None:
            await stream.message(response)
        await stream.close()


class StreamListener(ListWatcher):
    """A legacy GET stream: list_changed and keep-alive comments until the client goes away, its session is
    deleted, or its credentials stop working."""

    def __init__(self, stream: EventStream, user: Any, token: Any = None, session_id: str = "") -> None:
        self.stream = stream
        self.user = user
        self.token = token
        self.session_id = session_id
        self.pending: asyncio.Queue[Any] = asyncio.Queue()
        self.stopped = asyncio.Event()

    def announce(self) -> None:
        self.pending.put_nowait(jsonrpc.notification("notifications/tools/list_changed"))

    def ended(self, reason: str) -> None:
        self.stopped.set()

    async def pump(self, request: HTTPRequest, *, keepalive: float) -> None:
        disconnect = asyncio.ensure_future(request.wait_disconnect())
        stopped = asyncio.ensure_future(self.stopped.wait())
        try:
            while not disconnect.done() and not stopped.done():
                item = asyncio.ensure_future(self.pending.get())
                done, _ = await asyncio.wait(
                    {item, disconnect, stopped}, timeout=keepalive, return_when=asyncio.FIRST_COMPLETED
                )
                if item in done:
                    await self.stream.message(item.result())
                    continue
                item.cancel()
                if not done:
                    await self.stream.comment()
        finally:
            for waiter in (disconnect, stopped):
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter


@on_event(SESSION_ENDED)
def _end_streams_of_ended_session(event: dict[str, Any]) -> None:
    """A deleted session's GET streams end, in whichever process holds them."""
    session_id = str(event.get("id", ""))
    for listener in list(hub().listeners):
        if isinstance(listener, StreamListener) and listener.session_id == session_id:
            hub().remove(listener)
            listener.end("The session was deleted.")


def _response(task: asyncio.Task[Any]) -> dict[str, Any] | None:
    """The handler's response; None once the client cancelled the request, which is then never answered."""
    return None if task.cancelled() else task.result()


def _strip(value: str | None) -> str | None:
    return value.strip() if value is not None else None


def _discard(message: Any) -> None:
    """Where messages go when nobody can receive them."""


def refused(refusal: Refused, request_id: Any = None) -> HTTPError:
    """The HTTP answer to a refused admission (or a stream refused for the user's allowance)."""
    return HTTPError(refusal.status, refusal.error, request_id=request_id, headers=refusal.headers)

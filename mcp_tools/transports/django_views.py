"""The MCP endpoints as Django views: the same ASGI applications Channels routes to, run for a request that
Django's own handler received, under WSGI or under Django's plain ASGI handler.

A view turns Django's request into the ASGI ``http`` scope and body the application would get from a server,
runs it, and turns what it sends back into Django's response. Nothing of the protocol lives here: sessions,
era detection, authentication and error mapping are the consumer's, whichever door a request came through.

Under ASGI the view is a coroutine run on the server's loop, and a response the application streams (SSE)
is streamed. Under WSGI the application runs on the process loop (``process_loop``) while the worker thread
waits for the whole answer; such a door cannot hold a response open without holding the worker, so the
scope tells the application so (``STREAMS``) and it answers every request whole and refuses what needs a
stream. ``door()`` chooses the view by the handler that resolves the URL: Django resolves it on its event
loop under ASGI and in a worker thread without one under WSGI.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_not_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import ResolverMatch, URLPattern, path
from django.views.decorators.csrf import csrf_exempt

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import InvalidRequest
from mcp_tools.protocol import jsonrpc
from mcp_tools.protocol.errors import error_response
from mcp_tools.tools.catalog import catalog
from mcp_tools.transports.http_request import STREAMS
from mcp_tools.transports.process_loop import submit

App = Callable[..., Any]
T = TypeVar("T")
# How many body chunks of a streamed answer may wait for Django to write them: past this the application
# waits, as it would for a slow client on any ASGI server.
STREAM_BACKLOG = 64
# What a WSGI worker waits beyond the longest call before it gives up on an answer (then 504).
WAIT_MARGIN_SECONDS = 30.0
# How long a worker waits to learn the longest any enabled tool may run (a read of the catalog).
LOOKUP_SECONDS = 5.0


def asgi_scope(request: HttpRequest, *, streams: bool) -> dict[str, Any]:
    """The ASGI ``http`` scope of a Django request, as a server would have handed it to the application."""
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):  # Django's ASGIRequest keeps the scope it was made from
        return {**scope, STREAMS: streams}
    return environ_scope(request.META, request.path, streams=streams)


def environ_scope(environ: Mapping[str, Any], path: str, *, streams: bool) -> dict[str, Any]:
    """The ASGI ``http`` scope of a WSGI environ (or a Django request's ``META``), for ``path``."""
    headers = [
        (name[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
        for name, value in environ.items()
        if name.startswith("HTTP_")
    ]
    if "HTTP_HOST" not in environ and environ.get("SERVER_NAME"):  # HTTP/1.0: the server's name, as Django reads it
        port = str(environ.get("SERVER_PORT", ""))
        host = str(environ["SERVER_NAME"]) + ("" if port in ("", "80", "443") else f":{port}")
        headers.append((b"host", host.encode("latin-1")))
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(name):
            headers.append((name.replace("_", "-").lower().encode("latin-1"), str(environ[name]).encode("latin-1")))
    protocol = str(environ.get("SERVER_PROTOCOL", "HTTP/1.1"))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": protocol.partition("/")[2] or "1.1",
        "method": str(environ.get("REQUEST_METHOD", "GET")).upper(),
        "scheme": str(environ.get("wsgi.url_scheme", "http")),
        "path": path,
        "raw_path": path.encode("utf-8"),
        "root_path": str(environ.get("SCRIPT_NAME", "")),
        "query_string": str(environ.get("QUERY_STRING", "")).encode("latin-1"),
        "headers": headers,
        "client": (str(environ.get("REMOTE_ADDR", "")), _port(environ.get("REMOTE_PORT"))),
        "server": (str(environ.get("SERVER_NAME", "")), _port(environ.get("SERVER_PORT"))),
        STREAMS: streams,
    }


def _port(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def unread_chunked(environ: Mapping[str, Any]) -> bool:
    """Whether a WSGI request's body was sent in chunks without a length: Django (and PEP 3333) read no body
    then, so the request is refused with 411 rather than answered as if it were empty."""
    chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
    return chunked and not environ.get("CONTENT_LENGTH")


LENGTH_REQUIRED: tuple[dict[str, Any], bytes] = (
    {"type": "http.response.start", "status": 411, "headers": [(b"content-type", b"application/json")]},
    jsonrpc.encode(error_response(None, InvalidRequest("Send the body with a Content-Length header"))).encode(),
)


def read_body(request: HttpRequest) -> bytes:
    """The body, at most one byte past MAX_MESSAGE_BYTES: the application answers 413 for that byte, and a
    larger body is never held. Read from the stream, not ``request.body``, which reads it whole first."""
    return request.read(int(mcp_settings.MAX_MESSAGE_BYTES) + 1)


class Relay:
    """The ASGI ``receive`` and ``send`` of one request: the body in, the response out.

    ``receive`` hands over the body, then waits until the client goes away (``gone``), as a server's would.
    What ``send`` gets is kept for the view: the response's start, then its body chunks in order.
    """

    def __init__(self, body: bytes, backlog: int = STREAM_BACKLOG) -> None:
        self.body: bytes | None = body
        self.gone = asyncio.Event()
        self.started: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        # Bounded where Django writes chunks as they come (the application then waits for a slow client);
        # unbounded (0) where the whole answer is gathered first.
        self.chunks: asyncio.Queue[tuple[bytes, bool]] = asyncio.Queue(backlog)

    async def receive(self) -> dict[str, Any]:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.started.set_result(message)
        elif message["type"] == "http.response.body":
            await self.chunks.put((bytes(message.get("body", b"")), bool(message.get("more_body", False))))


async def answer(app: App, scope: dict[str, Any], body: bytes) -> tuple[dict[str, Any], bytes]:
    """Run ``app`` for one request and return its start message and its whole body (WSGI: nothing streams)."""
    relay = Relay(body, backlog=0)
    try:
        await app(scope, relay.receive, relay.send)
    finally:
        relay.gone.set()
    if not relay.started.done():
        raise RuntimeError("The MCP endpoint ended without a response")
    parts = []
    while not relay.chunks.empty():
        parts.append(relay.chunks.get_nowait()[0])
    return relay.started.result(), b"".join(parts)


async def _started(relay: Relay, task: asyncio.Future[Any]) -> dict[str, Any]:
    """The response's start; the application's own exception if it ended without one."""
    await asyncio.wait({relay.started, task}, return_when=asyncio.FIRST_COMPLETED)
    if relay.started.done():
        return relay.started.result()
    task.result()  # raises what the application raised
    raise RuntimeError("The MCP endpoint ended without a response")


def answer_whole(app: App, scope: dict[str, Any], body: bytes) -> tuple[dict[str, Any], bytes]:
    """``answer`` on the process loop, for a thread without a loop of its own; 504 when no answer comes within
    the longest call's time and a margin."""
    future = submit(answer(app, scope, body))
    try:
        return _wait(future)
    except TimeoutError:
        future.cancel()
        return {"type": "http.response.start", "status": 504, "headers": []}, b""


def django_response(start: dict[str, Any], body: bytes) -> HttpResponse:
    response = HttpResponse(body, status=start["status"])
    _copy_headers(start, response)
    return response


def _copy_headers(start: dict[str, Any], response: HttpResponse | StreamingHttpResponse) -> None:
    headers: dict[str, str] = {}
    for raw_name, raw_value in start.get("headers", ()):
        name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if "content-type" not in headers:
        del response.headers["Content-Type"]  # Django's default (text/html) would describe a body there is not
    for name, value in headers.items():
        response.headers[name] = value


def wsgi_view(app: App) -> Callable[[HttpRequest], HttpResponse]:
    """The view for Django's WSGI handler: the application runs on the process loop, answering whole."""

    def view(request: HttpRequest) -> HttpResponse:
        if unread_chunked(request.META):
            return django_response(*LENGTH_REQUIRED)
        start, body = answer_whole(app, asgi_scope(request, streams=False), read_body(request))
        return django_response(start, body)

    return _endpoint(view)


def _wait(future: concurrent.futures.Future[T]) -> T:
    """The answer, waited for as long as the longest call allowed here may take, and a margin.

    The site's limit first; only an answer not in by then asks how long a tool's own limit allows
    (``Tool.timeout_seconds`` may exceed the site's), so quick answers, the health check's among them, never
    read the tools.
    """
    waited = float(mcp_settings.CALL_TIMEOUT_SECONDS) + WAIT_MARGIN_SECONDS
    try:
        return future.result(timeout=waited)
    except TimeoutError:
        longest = submit(_longest_call()).result(timeout=LOOKUP_SECONDS)
        if longest + WAIT_MARGIN_SECONDS <= waited:
            raise
    return future.result(timeout=longest + WAIT_MARGIN_SECONDS - waited)


async def _longest_call() -> float:
    """The longest a call may run: the site's limit, or an enabled tool's own if longer."""
    limits = [float(mcp_settings.CALL_TIMEOUT_SECONDS)]
    with contextlib.suppress(Exception):  # tools that cannot be read now: the site's limit stands
        limits += [float(entry.timeout_seconds) for entry in (await catalog.get()).entries if entry.timeout_seconds]
    return max(limits)


def asgi_view(app: App) -> Callable[[HttpRequest], Any]:
    """The view for Django's ASGI handler: the application runs on the server's loop; streams stream."""

    async def view(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        relay = Relay(read_body(request))
        # A context of its own: what the application starts and keeps (the change hub's tasks) must not hold on
        # to this request's (asgiref gives each request its own thread for sync work, ended with the request).
        task = asyncio.get_running_loop().create_task(
            app(asgi_scope(request, streams=True), relay.receive, relay.send), context=contextvars.Context()
        )
        try:
            start = await _started(relay, task)
            # A stream starts with an empty chunk (headers first): Django sends the headers on its own.
            first, more = await relay.chunks.get()
        except BaseException:
            relay.gone.set()
            task.cancel()
            raise
        if not more:
            await task
            return django_response(start, first)
        response = StreamingHttpResponse(_rest(relay, task, first), status=start["status"])
        _copy_headers(start, response)
        return response

    return _endpoint(view)


async def _rest(relay: Relay, task: asyncio.Task[Any], first: bytes) -> AsyncIterator[bytes]:
    """A streamed body chunk by chunk; when Django stops reading (the client left), the application is told."""
    try:
        if first:
            yield first
        while True:
            chunk, more = await relay.chunks.get()
            if chunk:
                yield chunk
            if not more:
                break
    finally:
        relay.gone.set()
        if not task.done():
            task.add_done_callback(_retrieve)


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _endpoint(view: Callable[..., Any]) -> Callable[..., Any]:
    """The MCP endpoints keep their own gates: a bearer token, not a form, so no CSRF token (Origin is
    checked by the endpoint) and no redirect to a sign-in page (``LoginRequiredMiddleware``: the endpoint
    answers 401 with its challenge); no request-wide transaction, since the work runs in other threads."""
    return login_not_required(csrf_exempt(transaction.non_atomic_requests(view)))


class DoorPattern(URLPattern):
    """A URL pattern whose view follows the handler: the ASGI view where Django resolves the URL on its
    event loop (its ASGI handler), the WSGI view in a thread without one."""

    def __init__(self, route: str, app: App, name: str) -> None:
        self.sync_view = wsgi_view(app)
        self.async_view = asgi_view(app)
        super().__init__(path(route, self.sync_view, name=name).pattern, self.sync_view, name=name)

    def resolve(self, path: str) -> ResolverMatch | None:
        match = super().resolve(path)
        if match is not None and _on_event_loop():
            match.func = self.async_view
        return match


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def door(route: str, app: App, name: str) -> DoorPattern:
    """``path(route, ...)`` for an ASGI application served through Django's own handlers."""
    return DoorPattern(route, app, name)

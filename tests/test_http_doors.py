"""What the Django doors add to Streamable HTTP: a WSGI worker answers whole and says so, Django's ASGI handler
streams as Channels does, and the views sit inside the site's own settings, middleware and sign-in."""

from __future__ import annotations

import asyncio
import contextvars
import io
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.core.wsgi import get_wsgi_application
from django.db import connection, connections
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_tools.models import Tool, ToolCall
from mcp_tools.notify.hub import hub
from mcp_tools.transports import django_views
from mcp_tools.transports.django_views import door
from mcp_tools.transports.http import NO_STREAMS
from tests.db import db_call
from tests.http_doors import (
    CHANNELS,
    DJANGO_ASGI,
    DJANGO_DOORS,
    WSGI_DOORS,
    WSGI_FIRST,
    build,
    doors,
    streams,
)
from tests.live.asgi_http import TIMEOUT, HttpClient, modern_headers, modern_request, notification, request
from tests.messages import error
from tests.websocket import login_cookie

pytestmark = pytest.mark.django_db(transaction=True)

LATEST = "2025-11-25"
JSON = {"content-type": "application/json"}
ADDED = {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}, "isError": False}
LIST_CHANGED = "notifications/tools/list_changed"
STAMP = "x-site-stamp"


def retitle_greet() -> None:
    """An owner's edit that changes what ``tools/list`` shows."""
    tool = Tool.objects.get(name="greet")
    tool.title = "Say hello"
    tool.save()


def add(request_id: Any) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})


def progress_call(request_id: Any) -> dict[str, Any]:
    params = {"name": "sync_progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}}
    return request(request_id, "tools/call", params)


def progress(step: int) -> dict[str, Any]:
    return notification("notifications/progress", {"progressToken": "p", "progress": step, "total": 2})


def listen(request_id: Any) -> dict[str, Any]:
    return modern_request(request_id, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})


async def session(token: str, http_door: str) -> HttpClient:
    client = HttpClient(token, door=http_door)
    await client.initialize(LATEST)
    return client


# What a WSGI worker cannot hold open ------------------------------------------------------------------


@doors(*WSGI_DOORS)
async def test_a_legacy_get_on_wsgi_is_405_with_allow_and_the_reason(token, tools, http_door):
    client = await session(token, http_door)

    reply = await client.send(method="GET")

    assert (reply.status, reply.headers) == (405, {**JSON, "allow": "POST, DELETE"})
    assert reply.json() == error(None, INVALID_REQUEST, NO_STREAMS)


@doors(*WSGI_DOORS)
async def test_subscriptions_listen_on_wsgi_is_404_method_not_found_with_the_reason(token, tools, http_door):
    reply = await HttpClient(token, door=http_door).send(listen(1), headers=modern_headers("subscriptions/listen"))

    assert (reply.status, reply.headers) == (404, JSON)
    assert reply.json() == error(1, METHOD_NOT_FOUND, NO_STREAMS)


@doors()
async def test_list_changed_is_advertised_only_where_the_door_streams(token, tools, http_door):
    discover = modern_request(1, "server/discover")

    initialized = await HttpClient(token, door=http_door).initialize(LATEST)
    discovered = await HttpClient(token, door=http_door).send(discover, headers=modern_headers("server/discover"))

    advertised = {"listChanged": True} if streams(http_door) else {}
    assert initialized.json()["result"]["capabilities"]["tools"] == advertised
    assert discovered.json()["result"]["capabilities"]["tools"] == advertised


@doors()
async def test_a_progress_call_streams_where_the_door_streams_and_answers_json_on_wsgi(token, tools, http_door):
    client = await session(token, http_door)

    reply = await client.send(progress_call(4))

    answer = {"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "done"}], "isError": False}}
    if streams(http_door):
        assert (reply.status, reply.headers["content-type"]) == (200, "text/event-stream")
        assert reply.messages() == [progress(1), progress(2), answer]
    else:
        assert (reply.status, reply.headers) == (200, {**JSON, "mcp-session-id": client.session_id})
        assert reply.json() == answer


def hub_emptied(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """An event set when the last listener leaves this loop's hub."""
    emptied, watched = asyncio.Event(), hub()
    remove = watched.remove

    def noting(listener: Any) -> None:
        remove(listener)
        if not watched.listeners:
            emptied.set()

    monkeypatch.setattr(watched, "remove", noting)
    return emptied


@doors(DJANGO_ASGI)
async def test_a_listen_stream_on_django_asgi_hears_list_changed_and_ends_when_the_client_leaves(
    token, tools, http_door, monkeypatch
):
    emptied = hub_emptied(monkeypatch)
    client = HttpClient(token, door=http_door)
    stream = await client.open(listen(1), headers=modern_headers("subscriptions/listen"))
    acknowledged = await stream.message()
    listening = len(hub().listeners)

    await db_call(retitle_greet)
    heard = await stream.message()
    await stream.disconnect()
    await asyncio.wait_for(emptied.wait(), TIMEOUT)

    assert (stream.status, stream.headers["content-type"]) == (200, "text/event-stream")
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    assert heard["method"] == LIST_CHANGED
    assert listening == 1
    assert hub().listeners == set()


# Size, host, origin and health on every Django door ------------------------------------------------------


@doors(*DJANGO_DOORS)
async def test_a_body_over_max_message_bytes_is_413_on_each_django_door(token, tools, settings, http_door):
    client = await session(token, http_door)
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_MESSAGE_BYTES": 100}

    reply = await client.send(b"x" * 5000)

    assert (reply.status, reply.json()) == (413, error(None, INVALID_REQUEST, "Message larger than 100 bytes"))


class CountingInput(io.BytesIO):
    """A WSGI input that remembers how many bytes were read from it."""

    taken = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.taken += len(data)
        return data

    def readline(self, size: int | None = -1) -> bytes:
        data = super().readline(size)
        self.taken += len(data)
        return data


def test_the_wsgi_door_reads_one_byte_past_max_message_bytes_and_no_more(token, tools, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_MESSAGE_BYTES": 100}
    body = CountingInput(b"x" * 1_000_000)
    environ = {
        **RequestFactory().get("/mcp").environ,
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": "1000000",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "HTTP_HOST": "testserver",
        "wsgi.input": body,
    }
    started: list[str] = []

    response = get_wsgi_application()(environ, lambda status, headers, *exc: started.append(status))
    answer = b"".join(response)
    response.close()  # type: ignore[attr-defined]

    # Django's reason phrase for the status, which Python's own table names (it changed in Python 3.13).
    assert started == [f"413 {HTTPStatus(413).phrase}"]
    assert json.loads(answer) == error(None, INVALID_REQUEST, "Message larger than 100 bytes")
    assert body.taken == mcp_settings.MAX_MESSAGE_BYTES + 1


@doors()
async def test_a_host_outside_allowed_hosts_is_refused_before_anything_is_run(token, tools, http_door):
    reply = await HttpClient(token, door=http_door).send(add(1), headers={"host": "evil.example"})

    if http_door in (CHANNELS, WSGI_FIRST):
        # The endpoint's own check: ahead of Django's stack, as a Channels route is.
        assert (reply.status, reply.json()) == (421, error(None, INVALID_REQUEST, "Invalid Host header"))
    else:
        # Django refuses the host itself (DisallowedHost) before its URL resolver reaches the endpoint.
        assert (reply.status, reply.headers["content-type"]) == (400, "text/html; charset=utf-8")
    assert await db_call(lambda: ToolCall.objects.count()) == 0


@doors()
async def test_a_cross_site_origin_is_403_and_the_site_origin_needs_no_csrf_token(token, tools, user, http_door):
    _name, value = await db_call(login_cookie, user)
    cookie = {"cookie": value.decode()}
    client = HttpClient(door=http_door)

    refused = await client.send(add(1), headers={**cookie, "origin": "http://evil.example"})
    accepted = await client.send(
        request(0, "initialize", {"protocolVersion": LATEST, "capabilities": {}}),
        headers={**cookie, "origin": "http://testserver"},
    )

    assert refused.status == 403
    assert accepted.status == 200
    assert accepted.json()["result"]["protocolVersion"] == LATEST


@doors()
async def test_health_answers_on_every_door(db, http_door):
    reply = await HttpClient(door=http_door).send(method="GET", path="/mcp/health")

    assert (reply.status, reply.headers) == (200, {**JSON, "cache-control": "no-store"})
    assert reply.json()["status"] == "ok"


# The site around the views ------------------------------------------------------------------------


@pytest.fixture
def atomic_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every connection made from now on, in any thread, reads these settings.
    monkeypatch.setitem(connections.settings["default"], "ATOMIC_REQUESTS", True)


@doors(*DJANGO_DOORS)
async def test_a_call_is_answered_and_audited_on_a_site_with_atomic_requests(
    token, tools, atomic_requests, monkeypatch, http_door
):
    # Django refuses an async view it would wrap in a transaction; a WSGI worker would hold one open meanwhile.
    client = await session(token, http_door)
    in_transaction = []
    submit = django_views.submit

    def noting(work: Any) -> Any:
        in_transaction.append(connection.in_atomic_block)
        return submit(work)

    monkeypatch.setattr(django_views, "submit", noting)

    reply = await client.send(add(1))

    assert (reply.status, reply.json()) == (200, {"jsonrpc": "2.0", "id": 1, "result": ADDED})
    assert await db_call(lambda: list(ToolCall.objects.values_list("tool_name", "outcome"))) == [("add", "ok")]
    assert in_transaction == ([False] if http_door in WSGI_DOORS else [])


def stamp(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    """A site's middleware, sync and async alike: it stamps every response."""
    if asyncio.iscoroutinefunction(get_response):

        async def stamped_async(request: HttpRequest) -> HttpResponse:
            response = await get_response(request)
            response[STAMP] = "1"
            return response

        return stamped_async

    def stamped(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response[STAMP] = "1"
        return response

    return stamped


stamp.sync_capable = True  # type: ignore[attr-defined]
stamp.async_capable = True  # type: ignore[attr-defined]


@pytest.fixture
def stamping(settings: Any) -> None:
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_http_doors.stamp"]


@doors(*DJANGO_DOORS)
async def test_the_sites_middleware_runs_on_mcp_responses_unless_the_endpoints_come_first(
    token, tools, stamping, http_door
):
    client = HttpClient(token, door=http_door, app=build(http_door))

    initialized = await client.initialize(LATEST)
    called = await client.send(add(1))
    health = await client.send(method="GET", path="/mcp/health")

    stamped = "absent" if http_door == WSGI_FIRST else "1"
    assert [reply.headers.get(STAMP, "absent") for reply in (initialized, called, health)] == [stamped] * 3
    assert called.json() == {"jsonrpc": "2.0", "id": 1, "result": ADDED}


# The WSGI view's own context ------------------------------------------------------------------------------

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="none")


async def tell_mark(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": MARK.get().encode()})


def test_the_wsgi_view_runs_the_application_in_a_context_of_its_own():
    view = door("mark", tell_mark, name="mark").sync_view

    def worker() -> HttpResponse:
        MARK.set("worker thread")
        return view(RequestFactory().post("/mark", b"{}", content_type="application/json"))

    response = contextvars.copy_context().run(worker)

    assert (response.status_code, response.content) == (200, b"none")


# How long a WSGI worker waits -----------------------------------------------------------------------------


def give_wait_sync_seconds(seconds: int) -> None:
    Tool.objects.filter(name="wait_sync").update(timeout_seconds=seconds)


@doors(*WSGI_DOORS)
async def test_a_wsgi_worker_waits_for_a_tool_allowed_longer_than_the_site_default(
    token, tools, settings, monkeypatch, http_door
):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CALL_TIMEOUT_SECONDS": 1}
    monkeypatch.setattr(django_views, "WAIT_MARGIN_SECONDS", 0.0)
    await db_call(give_wait_sync_seconds, 5)
    client = await session(token, http_door)

    reply = await client.send(request(1, "tools/call", {"name": "wait_sync", "arguments": {"seconds": 2}}))

    assert (reply.status, reply.json()["result"]["content"]) == (200, [{"type": "text", "text": "waited"}])


@doors(*WSGI_DOORS)
async def test_a_wsgi_worker_gives_up_past_the_longest_call_allowed(token, tools, settings, monkeypatch, http_door):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CALL_TIMEOUT_SECONDS": 1}
    monkeypatch.setattr(django_views, "WAIT_MARGIN_SECONDS", 0.0)
    await db_call(give_wait_sync_seconds, 2)
    client = await session(token, http_door)
    # The application would answer when the call times out; one that does not is not waited for past the limit.
    monkeypatch.setattr(django_views, "answer", never_answer)

    reply = await client.send(request(1, "tools/call", {"name": "wait_sync", "arguments": {"seconds": 10}}))

    assert (reply.status, reply.body) == (504, b"")


async def never_answer(app: Any, scope: dict[str, Any], body: bytes) -> Any:
    await asyncio.Event().wait()


# What the site around the views may add ---------------------------------------------------------------------


@pytest.fixture
def login_required(settings: Any) -> None:
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.contrib.auth.middleware.LoginRequiredMiddleware"]


@doors(*DJANGO_DOORS)
async def test_a_site_that_requires_sign_in_everywhere_still_answers_tokens_and_challenges(
    token, tools, login_required, http_door
):
    # Django's LoginRequiredMiddleware would send the endpoint's callers to a sign-in page.
    app = build(http_door)
    signed = HttpClient(token, door=http_door, app=app)
    stranger = HttpClient(door=http_door, app=app)

    initialized = await signed.initialize(LATEST)
    refused = await stranger.send(add(1))
    health = await stranger.send(method="GET", path="/mcp/health")

    assert initialized.status == 200
    assert (refused.status, refused.headers["www-authenticate"].startswith("Bearer")) == (401, True)
    assert health.status == 200


@doors(*WSGI_DOORS)
async def test_a_chunked_body_without_a_length_is_411_under_wsgi_not_an_empty_message(token, tools, http_door):
    client = HttpClient(token, door=http_door)

    reply = await client.send(add(1), headers={"transfer-encoding": "chunked", "content-length": None})

    assert (reply.status, reply.headers["content-type"]) == (411, "application/json")
    assert reply.json() == error(None, INVALID_REQUEST, "Send the body with a Content-Length header")

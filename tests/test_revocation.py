"""Revoked, expired and deactivated: open connections are cut off and every later request is refused.

These drive the WebSocket consumer and the Streamable HTTP consumer in process; tests/test_freshness.py
makes the same changes from a second process.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from mcp_tools.access.credentials import TOKEN_EXPIRED, TOKEN_REVOKED, USER_INACTIVE
from mcp_tools.exceptions import UNAUTHENTICATED
from mcp_tools.models import AccessToken, ChangeCounter, Tool
from mcp_tools.notify import counters as polling
from mcp_tools.notify.hub import hub
from mcp_tools.transports.websocket import CLOSE_UNAUTHENTICATED
from tests.challenges import refused_token
from tests.db import db_call
from tests.live.asgi_http import HttpClient, modern_headers, modern_request, request
from tests.messages import LIST_CHANGED
from tests.websocket import TIMEOUT, Connect, WSClient, pong, ws_headers
from tests.wire import Wire

pytestmark = pytest.mark.django_db(transaction=True)

PONG = {"jsonrpc": "2.0", "id": "ping", "result": {}}


def closed(reason: str) -> dict[str, Any]:
    return {"type": "websocket.close", "code": CLOSE_UNAUTHENTICATED, "reason": reason}


def refused(reason: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": UNAUTHENTICATED, "message": reason}}


async def opened(ws_connect: Connect, raw_token: str) -> WSClient:
    communicator, accepted, _ = await ws_connect(ws_headers(raw_token))
    assert accepted
    client = WSClient(communicator)
    await client.initialize()
    return client


async def close_frame(client: WSClient) -> dict[str, Any]:
    """The next output of the connection, which must be its close."""
    return dict(await client.communicator.receive_output(timeout=TIMEOUT))


def expire(token_id: int, when: Any) -> None:
    token = AccessToken.objects.get(pk=token_id)
    token.expires_at = when
    token.save()


# WebSocket ----------------------------------------------------------------------------------------


async def test_a_token_deleted_while_connected_closes_its_websocket_with_4401(
    ws_connect: Connect, tools: None, user: Any, django_user_model: Any
) -> None:
    mine, raw = await db_call(AccessToken.objects.issue, user)
    other_user = await db_call(django_user_model.objects.create_user, "bob")
    _, other_raw = await db_call(AccessToken.objects.issue, other_user)
    client, bystander = await opened(ws_connect, raw), await opened(ws_connect, other_raw)

    await db_call(mine.delete)

    assert await close_frame(client) == closed(TOKEN_REVOKED)
    assert await pong(bystander) == PONG


async def test_a_token_saved_with_a_past_expiry_closes_its_websocket(ws_connect: Connect, tools: None, user: Any):
    token, raw = await db_call(AccessToken.objects.issue, user)
    client = await opened(ws_connect, raw)

    await db_call(expire, token.pk, timezone.now() - timedelta(minutes=1))

    assert await close_frame(client) == closed(TOKEN_EXPIRED)


async def test_a_token_expiring_while_connected_closes_its_websocket_when_the_expiry_passes(
    ws_connect: Connect, tools: None, user: Any
) -> None:
    token, raw = await db_call(AccessToken.objects.issue, user)
    await db_call(expire, token.pk, timezone.now() + timedelta(seconds=1))
    client = await opened(ws_connect, raw)
    assert await pong(client) == PONG

    # Nothing announces an expiry: the connection's own timer closes it.
    assert await close_frame(client) == closed(TOKEN_EXPIRED)
    assert timezone.now() >= (await db_call(AccessToken.objects.get, pk=token.pk)).expires_at


async def test_a_later_expiry_saved_while_connected_moves_the_close(ws_connect: Connect, tools: None, user: Any):
    extended, raw = await db_call(AccessToken.objects.issue, user)
    await db_call(expire, extended.pk, timezone.now() + timedelta(seconds=1))
    client = await opened(ws_connect, raw)
    await db_call(expire, extended.pk, timezone.now() + timedelta(days=1))

    # A second connection whose token expires after the first one's old expiry marks when it has passed.
    sentinel, sentinel_raw = await db_call(AccessToken.objects.issue, user)
    await db_call(expire, sentinel.pk, timezone.now() + timedelta(seconds=1.5))
    marker = await opened(ws_connect, sentinel_raw)
    assert await close_frame(marker) == closed(TOKEN_EXPIRED)

    assert await pong(client) == PONG


@pytest.mark.parametrize(
    ("change", "reason"),
    # Deleting a user deletes their tokens too, and whichever is heard first ends the connection.
    [("deactivate", USER_INACTIVE), ("delete", TOKEN_REVOKED)],
)
async def test_a_user_deactivated_or_deleted_while_connected_is_closed_and_refused_afterwards(
    ws_connect: Connect, tools: None, user: Any, change: str, reason: str
) -> None:
    _, raw = await db_call(AccessToken.objects.issue, user)
    client = await opened(ws_connect, raw)

    if change == "deactivate":
        user.is_active = False
        await db_call(user.save)
    else:
        await db_call(user.delete)

    assert await close_frame(client) == closed(reason)
    _communicator, accepted, refusal = await ws_connect(ws_headers(raw))
    assert (accepted, refusal) == (False, 1000)


async def test_a_token_moved_to_another_user_closes_the_first_users_websocket(
    ws_connect: Connect, tools: None, user: Any, django_user_model: Any
) -> None:
    token, raw = await db_call(AccessToken.objects.issue, user)
    client = await opened(ws_connect, raw)
    other = await db_call(django_user_model.objects.create_user, "mallory")

    token.user = other
    await db_call(token.save)

    assert await close_frame(client) == closed(TOKEN_REVOKED)


# The protocol core --------------------------------------------------------------------------------


async def test_a_request_made_after_the_expiry_passed_is_refused_before_any_timer_fires(tools: None, user: Any):
    token, _ = await db_call(AccessToken.objects.issue, user)
    wire = Wire(user)
    wire.session.token = token
    await wire.initialize("2025-11-25")
    token.expires_at = timezone.now() - timedelta(microseconds=1)

    reply = await wire.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})

    assert reply == refused(TOKEN_EXPIRED, reply["id"])
    assert wire.session.ended_because == TOKEN_EXPIRED
    assert (await wire.request("tools/list"))["error"]["code"] == UNAUTHENTICATED


async def test_a_change_counted_without_any_event_reaches_open_sessions_by_polling(
    ws_connect: Connect, tools: None, user: Any, settings: Any
) -> None:
    # queryset.update() sends no signal, like a change made by a process whose events never arrive here.
    # Beside a Redis layer the counters are read at the safety poll instead.
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "POLL_SECONDS": 0.05, "SAFETY_POLL_SECONDS": 0.05}
    _, raw = await db_call(AccessToken.objects.issue, user)
    client = await opened(ws_connect, raw)

    def disable_quietly() -> None:
        Tool.objects.filter(name="add").update(enabled=False)
        polling.bump(polling.TOOLS)

    await db_call(disable_quietly)

    assert await client.receive() == LIST_CHANGED
    reply = await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert reply["error"]["message"] == "Unknown tool: add"


async def test_a_token_deleted_without_any_event_closes_its_websocket_by_polling(
    ws_connect: Connect, tools: None, user: Any, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "POLL_SECONDS": 0.05, "SAFETY_POLL_SECONDS": 0.05}
    token, raw = await db_call(AccessToken.objects.issue, user)
    client = await opened(ws_connect, raw)

    def revoke_quietly() -> None:
        AccessToken.objects.filter(pk=token.pk)._raw_delete("default")
        polling.bump(polling.TOKENS)

    await db_call(revoke_quietly)

    assert await close_frame(client) == closed(TOKEN_REVOKED)
    assert await db_call(ChangeCounter.objects.get, pk=polling.TOKENS)


# Streamable HTTP ----------------------------------------------------------------------------------


async def http_client(user: Any) -> tuple[AccessToken, HttpClient]:
    token, raw = await db_call(AccessToken.objects.issue, user)
    return token, HttpClient(raw)


async def test_a_revoked_token_ends_the_legacy_get_stream_and_its_next_post_is_refused(tools: None, user: Any):
    token, http = await http_client(user)
    await http.initialize()
    stream = await http.open(method="GET")

    await db_call(token.delete)

    assert await stream.rest() == []
    reply = await http.send(request(2, "tools/list"))
    assert reply.status == 401
    assert reply.headers["www-authenticate"] == refused_token()


async def test_deleting_a_legacy_session_ends_its_get_stream(tools: None, user: Any):
    _, http = await http_client(user)
    await http.initialize()
    stream = await http.open(method="GET")

    deleted = await http.send(method="DELETE")

    assert deleted.status == 200
    assert await stream.rest() == []
    assert [listener for listener in hub().listeners if getattr(listener, "session_id", "") == http.session_id] == []


async def test_a_revoked_token_ends_a_listen_stream_without_a_final_result(tools: None, user: Any):
    token, http = await http_client(user)
    listen = modern_request(1, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    stream = await http.open(listen, headers=modern_headers("subscriptions/listen"))
    acknowledged = await stream.message()
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"

    await db_call(token.delete)

    assert await stream.rest() == []
    reply = await http.send(modern_request(2, "tools/list"), headers=modern_headers("tools/list"))
    assert reply.status == 401


# Connections per user ----------------------------------------------------------------------------


async def test_a_user_past_max_connections_per_user_is_refused_429_on_every_kind_of_connection(
    ws_connect: Connect, tools: None, user: Any, django_user_model: Any, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CONNECTIONS_PER_USER": 2}
    _token, raw = await db_call(AccessToken.objects.issue, user)
    other = await db_call(django_user_model.objects.create_user, "bob")
    _, other_raw = await db_call(AccessToken.objects.issue, other)
    first = await opened(ws_connect, raw)
    http = HttpClient(raw)
    await http.initialize()
    stream = await http.open(method="GET")
    assert stream.status == 200

    _communicator, accepted, _ = await ws_connect(ws_headers(raw))
    listen = modern_request(1, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    listen_reply = await HttpClient(raw).send(listen, headers=modern_headers("subscriptions/listen"))
    get_reply = await http.send(method="GET")

    assert not accepted
    message = "Too many open connections (at most 2 per user)"
    assert (listen_reply.status, listen_reply.json()["error"]["message"]) == (429, message)
    assert (get_reply.status, get_reply.json()["error"]["message"]) == (429, message)
    assert await pong(await opened(ws_connect, other_raw)) == PONG  # another user is not held back
    await first.communicator.disconnect()
    assert await pong(await opened(ws_connect, raw)) == PONG  # a closed connection frees its place
    await http.close()

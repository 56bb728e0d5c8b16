"""Legacy HTTP session state stays bounded: client state, sessions per user, dead rows, the process cache."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from mcp_tools.access.audit_arguments import compact
from mcp_tools.conf import DEFAULTS
from mcp_tools.exceptions import INVALID_PARAMS, INVALID_REQUEST
from mcp_tools.models import AccessToken, ClientSession, ToolCall
from mcp_tools.notify.events import channel_layer, group_name
from mcp_tools.transports.http_sessions import (
    ENTRY_BYTES,
    MAX_REASON_CHARS,
    MAX_REQUEST_ID_CHARS,
    MAX_REQUEST_ID_INT,
    SESSION_CANCEL,
    memory_size,
    store,
)
from tests.db import db_call
from tests.live import services
from tests.live.asgi_http import HttpClient, request
from tests.testapp.mcp_tools import gate
from tests.websocket import TIMEOUT, WSClient

pytestmark = pytest.mark.django_db(transaction=True)

LATEST = "2025-11-25"
STATE_LIMIT = DEFAULTS["MAX_CLIENT_STATE_BYTES"]
SESSION_CAP = DEFAULTS["MAX_SESSIONS_PER_USER"]
NOT_FOUND = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "Session not found"}}


@pytest.fixture
def held_gate() -> Iterator[None]:
    """Holds ``slow_count`` at its first step until the test ends."""
    gate.reset()
    yield
    gate.open()


def mcp_tools_setting(settings: Any, **values: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, **values}


def json_size(value: Any) -> int:
    """The size the server measures client state in: compact JSON, non-ASCII characters escaped."""
    return len(compact(value))


def sized(size: int, **fields: Any) -> dict[str, Any]:
    """An object of ``fields`` plus a ``pad`` string, ``size`` bytes long as compact JSON."""
    value = {**fields, "pad": ""}
    value["pad"] = "x" * (size - json_size(value))
    assert json_size(value) == size
    return value


def many_keys(size: int) -> dict[str, Any]:
    """An object of as many small keys as fit in ``size`` bytes of compact JSON: the most memory for its size."""
    value: dict[str, Any] = {"name": "t"}
    while json_size({**value, f"k{len(value)}": 0}) <= size:
        value[f"k{len(value)}"] = 0
    return value


def initialize(client_info: Any = None, capabilities: Any = None) -> dict[str, Any]:
    params = {
        "protocolVersion": LATEST,
        "capabilities": {} if capabilities is None else capabilities,
        "clientInfo": {"name": "t", "version": "1"} if client_info is None else client_info,
    }
    return request(0, "initialize", params)


async def open_session(token: str, client_info: Any = None, capabilities: Any = None) -> HttpClient:
    client = HttpClient(token)
    reply = await client.send(initialize(client_info, capabilities))
    assert reply.status == 200 and "result" in reply.json(), reply
    client.session_id = reply.headers["mcp-session-id"]
    return client


async def answers(client: HttpClient) -> bool:
    reply = await client.send(request("p", "ping"))
    if reply.status == 404:
        assert reply.json() == NOT_FOUND
        return False
    assert (reply.status, reply.json()) == (200, {"jsonrpc": "2.0", "id": "p", "result": {}})
    return True


def session_rows(user: Any = None) -> list[ClientSession]:
    rows = ClientSession.objects.all() if user is None else ClientSession.objects.filter(user=user)
    return list(rows.order_by("created_at"))


def stored_state_bytes(rows: list[ClientSession]) -> int:
    return sum(json_size(row.client_info) + json_size(row.client_capabilities) for row in rows)


def issue_token(username: str) -> str:
    from django.contrib.auth import get_user_model

    return AccessToken.objects.issue(get_user_model().objects.create_user(username, password="pw"))[1]


# MAX_CLIENT_STATE_BYTES --------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["clientInfo", "capabilities"])
async def test_client_state_over_max_client_state_bytes_is_refused_and_opens_no_session(tools, token, field):
    oversized = sized(STATE_LIMIT + 1, name="t")
    body = initialize(client_info=oversized) if field == "clientInfo" else initialize(capabilities=oversized)

    reply = await HttpClient(token).send(body)

    assert (reply.status, reply.headers) == (400, {"content-type": "application/json"})
    message = f"{field} is larger than {STATE_LIMIT} bytes"
    assert reply.json() == {"jsonrpc": "2.0", "id": 0, "error": {"code": INVALID_PARAMS, "message": message}}
    assert await db_call(session_rows) == []


async def test_client_state_of_exactly_max_client_state_bytes_is_kept(tools, token):
    info, capabilities = sized(STATE_LIMIT, name="t", version="1"), sized(STATE_LIMIT, sampling={})

    client = await open_session(token, info, capabilities)

    [row] = await db_call(session_rows)
    assert (row.id, row.client_info, row.client_capabilities) == (client.session_id, info, capabilities)


async def test_max_client_state_bytes_sets_the_limit_on_a_websocket_too(ws_session, settings):
    mcp_tools_setting(settings, MAX_CLIENT_STATE_BYTES=100)
    client: WSClient = await ws_session(initialize=False)

    refused = await client.request("initialize", initialize(client_info=sized(101, name="t"))["params"])
    accepted = await client.request("initialize", initialize(client_info=sized(100, name="t"))["params"])

    assert refused["error"] == {"code": INVALID_PARAMS, "message": "clientInfo is larger than 100 bytes"}
    assert accepted["result"]["protocolVersion"] == LATEST


# MAX_SESSIONS_PER_USER ---------------------------------------------------------------------------


async def test_many_big_initializes_keep_the_database_and_the_cache_within_their_caps(tools, token, settings):
    info = many_keys(STATE_LIMIT)
    capabilities = sized(STATE_LIMIT, sampling={})
    cache_limit = 10 * (ENTRY_BYTES + memory_size(info) + memory_size(capabilities))
    mcp_tools_setting(settings, SESSION_CACHE_BYTES=cache_limit)
    clients = [await open_session(token, info, capabilities) for _ in range(2 * SESSION_CAP)]
    refused = [await HttpClient(token).send(initialize(sized(1_000_000, name="t"))) for _ in range(5)]

    rows = await db_call(session_rows)
    alive = [await answers(client) for client in clients]

    assert [row.id for row in rows] == [client.session_id for client in clients[SESSION_CAP:]]
    assert stored_state_bytes(rows) <= SESSION_CAP * 2 * STATE_LIMIT
    assert store.cache_bytes <= cache_limit
    assert alive == [False] * SESSION_CAP + [True] * SESSION_CAP
    assert [reply.json()["error"]["code"] for reply in refused] == [INVALID_PARAMS] * 5


async def test_one_session_over_the_cap_ends_the_least_recently_used_and_spares_other_users(tools, token, settings):
    mcp_tools_setting(settings, MAX_SESSIONS_PER_USER=3)
    bob = await open_session(await db_call(issue_token, "bob"))
    first, second, third = [await open_session(token) for _ in range(3)]
    # The first session was used last: the database learns of use when a process rechecks its cache.
    await db_call(lambda: ClientSession.objects.filter(id=first.session_id).update(last_seen_at=timezone.now()))

    fourth = await open_session(token)

    assert [await answers(c) for c in (first, second, third, fourth, bob)] == [True, False, True, True, True]
    assert sorted(row.id for row in await db_call(session_rows)) == sorted(
        c.session_id for c in (first, third, fourth, bob)
    )


async def test_ending_a_session_over_the_cap_cancels_its_running_call(tools, token, settings, held_gate):
    mcp_tools_setting(settings, MAX_SESSIONS_PER_USER=1)
    first = await open_session(token)
    params = {"name": "slow_count", "arguments": {"steps": 1}, "_meta": {"progressToken": "p"}}
    stream = await first.open(request("slow", "tools/call", params))
    await stream.message()

    second = await open_session(token)
    rest = await stream.rest()
    recorded = await db_call(lambda: list(ToolCall.objects.values_list("tool_name", "outcome")))

    assert rest == []
    assert recorded == [("slow_count", "cancelled")]
    assert [await answers(first), await answers(second)] == [False, True]


async def test_anonymous_sessions_share_one_cap(tools, settings):
    mcp_tools_setting(settings, ALLOW_ANONYMOUS=True, MAX_SESSIONS_PER_USER=2)

    clients = [await open_session("") for _ in range(3)]

    assert [await answers(client) for client in clients] == [False, True, True]
    assert len(await db_call(session_rows)) == 2


# Dead rows: pruned ----------------------------------------------------------------------------------


def age_sessions(ended: list[str], idle: list[str]) -> None:
    ClientSession.objects.filter(id__in=ended).update(ended_at=timezone.now())
    expired = timezone.now() - timedelta(seconds=DEFAULTS["SESSION_TTL_SECONDS"] + 1)
    ClientSession.objects.filter(id__in=idle).update(last_seen_at=expired)


async def test_opening_a_session_deletes_the_users_own_ended_and_expired_rows(tools, token):
    bob = await open_session(await db_call(issue_token, "bob"))
    ended, idle, live = [await open_session(token) for _ in range(3)]
    await db_call(age_sessions, [ended.session_id, bob.session_id], [idle.session_id])

    newest = await open_session(token)

    ids = sorted(row.id for row in await db_call(session_rows))
    assert ids == sorted([live.session_id, newest.session_id, bob.session_id])


async def test_a_session_opened_once_the_prune_interval_passed_deletes_every_dead_row_in_the_background(
    tools, token, settings
):
    alice = [await open_session(token) for _ in range(3)]
    await db_call(age_sessions, [alice[0].session_id], [alice[1].session_id])
    bob_token = await db_call(issue_token, "bob")
    mcp_tools_setting(settings, SESSION_PRUNE_SECONDS=300)
    store.pruned_at = float("-inf")

    await open_session(bob_token)
    assert store.pruning is not None
    await asyncio.wait_for(store.pruning, TIMEOUT)
    await db_call(age_sessions, [alice[2].session_id], [])
    await open_session(bob_token)

    remaining = {row.id for row in await db_call(session_rows)}
    assert store.pruning is None
    assert not {alice[0].session_id, alice[1].session_id} & remaining
    # The second session came within the interval: the row that died after the first prune is still there.
    assert alice[2].session_id in remaining


def prune(*args: str) -> str:
    out = io.StringIO()
    call_command("mcp_prune", *args, stdout=out)
    return out.getvalue()


async def test_mcp_prune_deletes_old_audit_rows_and_dead_sessions(tools, token):
    ended, idle, live = [await open_session(token) for _ in range(3)]
    await db_call(age_sessions, [ended.session_id], [idle.session_id])
    old = timezone.now() - timedelta(days=DEFAULTS["AUDIT_RETENTION_DAYS"], minutes=1)
    await db_call(ToolCall.objects.create, tool_name="old", transport="test", outcome="ok", created_at=old)
    await db_call(ToolCall.objects.create, tool_name="new", transport="test", outcome="ok")

    output = await db_call(prune)

    assert output == (
        "1 audit row(s) older than 90 day(s) deleted.\n"
        "2 ended or expired session(s) deleted.\n"
        "0 stale call(s) in flight deleted.\n"
    )
    assert [row.id for row in await db_call(session_rows)] == [live.session_id]
    assert await db_call(lambda: list(ToolCall.objects.values_list("tool_name", flat=True))) == ["new"]
    assert await answers(live)


# SESSION_CACHE_BYTES -----------------------------------------------------------------------------


async def test_the_session_cache_holds_at_most_session_cache_bytes_and_evicted_sessions_still_answer(
    tools, token, settings
):
    info = sized(1000, name="t")
    limit = 3 * (ENTRY_BYTES + memory_size(info) + memory_size({}))
    mcp_tools_setting(settings, SESSION_CACHE_BYTES=limit)

    clients = [await open_session(token, info) for _ in range(6)]

    assert store.cache_bytes <= limit
    assert [await answers(client) for client in clients] == [True] * 6
    assert store.cache_bytes <= limit


@pytest.fixture
def redis_channel_layer(settings: Any) -> None:
    """The Redis channel layer of MCP_TEST_REDIS_URL, under this run's prefix; skips without Redis."""
    url = services.redis_url()
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [url], "prefix": settings.REDIS_PREFIX},
        }
    }


async def test_a_cancel_told_to_other_processes_carries_only_bounded_ids_and_reasons(redis_channel_layer):
    layer = channel_layer()
    assert layer is not None
    channel = await layer.new_channel()
    await layer.group_add(group_name(), channel)
    longest = "x" * MAX_REQUEST_ID_CHARS
    try:
        await store.cancel_elsewhere("session", longest + "x", "too long an id")
        await store.cancel_elsewhere("session", MAX_REQUEST_ID_INT, "too large an id")
        await store.cancel_elsewhere("session", longest, "why" * MAX_REASON_CHARS)
        await store.cancel_elsewhere("session", -MAX_REQUEST_ID_INT, "")
        first = await asyncio.wait_for(layer.receive(channel), TIMEOUT)
        second = await asyncio.wait_for(layer.receive(channel), TIMEOUT)
    finally:
        await layer.group_discard(group_name(), channel)

    assert first == {
        "type": SESSION_CANCEL,
        "id": "session",
        "request": longest,
        "reason": ("why" * MAX_REASON_CHARS)[:MAX_REASON_CHARS],
    }
    assert second == {"type": SESSION_CANCEL, "id": "session", "request": -MAX_REQUEST_ID_INT, "reason": ""}

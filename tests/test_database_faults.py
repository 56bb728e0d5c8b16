"""PostgreSQL dropping a live server's connections: busy ones mid-call, idle ones between calls, a restart.

uvicorn processes on a private PostgreSQL database, with persistent connections (and health checks, as the
deployment docs recommend, or without), driven by the official SDK client or plain HTTP. A trigger makes
the inserts of accounts named ``slow-...`` wait in ``pg_sleep``, so that a model-query write holds its
connection while the test ends every backend of the database, as ``pg_terminate_backend`` or a failover
does, or restarts a PostgreSQL server of its own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from websockets.exceptions import InvalidStatus

from mcp_tools.exceptions import DATABASE_UNAVAILABLE as UNAVAILABLE_CODE
from mcp_tools.server.calls import DATABASE_UNAVAILABLE
from tests.live import services
from tests.live.asgi_http import initialize_params, request
from tests.live.backends import execute, query, terminate_backends, wait_for_sleeper
from tests.live.cluster import Cluster
from tests.live.legacy_http import LATEST, LegacySession
from tests.live.servers import ServerProcess
from tests.live.sites import Site, postgres_database
from tests.live.websocket_client import mcp_websocket

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 20
HEALTH_POLL_SECONDS = 0.1
SLOW_INSERTS = """
CREATE FUNCTION slow_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.name LIKE 'slow-%' THEN PERFORM pg_sleep(60); END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER slow_accounts BEFORE INSERT ON testapp_account FOR EACH ROW EXECUTE FUNCTION slow_accounts();
"""


@dataclass(frozen=True)
class PostgresSite:
    """A live server on a private PostgreSQL database: alice's token and the database's own URL."""

    server: ServerProcess
    token: str
    url: str


@pytest.fixture(scope="module")
def postgres_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The site, seeded with the query data, its inserts of ``slow-...`` accounts slowed by the trigger."""
    server_url = services.postgres_url()
    if server_url is None:
        services.unavailable("Needs PostgreSQL: set MCP_TEST_DATABASE_URL, e.g. postgres://postgres@127.0.0.1/postgres")
    with postgres_database(server_url) as switches:
        yield prepared(Site(tmp_path_factory.mktemp("db-faults"), {**switches, "MCP_TEST_CONN_MAX_AGE": "60"}))


def prepared(site: Site) -> Site:
    site.prepare()
    site.run("-m", "tests.live.query_data")
    execute(site.switches["MCP_TEST_DATABASE_URL"], SLOW_INSERTS)
    return site


@pytest.fixture(scope="module")
def checked(postgres_site: Site) -> Iterator[PostgresSite]:
    """A server keeping connections with health checks, as the deployment docs recommend."""
    with postgres_site.serve("checked") as (server,):
        yield PostgresSite(server, postgres_site.seeded.token, postgres_site.switches["MCP_TEST_DATABASE_URL"])


@pytest.fixture(scope="module")
def unchecked(postgres_site: Site) -> Iterator[PostgresSite]:
    """A server keeping connections without health checks: a connection is found lost only by using it."""
    site = replace(postgres_site, switches={**postgres_site.switches, "MCP_TEST_CONN_HEALTH_CHECKS": "0"}, servers=[])
    with site.serve("unchecked") as (server,):
        yield PostgresSite(server, site.seeded.token, site.switches["MCP_TEST_DATABASE_URL"])


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A PostgreSQL server of this module's own, which a test may stop and restart."""
    cluster = Cluster()
    try:
        cluster.create()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture(scope="module")
def restartable(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresSite]:
    """A server, with health checks, on a database of the private PostgreSQL server."""
    with postgres_database(cluster.url) as switches:
        site = prepared(Site(tmp_path_factory.mktemp("db-restart"), {**switches, "MCP_TEST_CONN_MAX_AGE": "60"}))
        with site.serve("restartable") as (server,):
            yield PostgresSite(server, site.seeded.token, switches["MCP_TEST_DATABASE_URL"])


@asynccontextmanager
async def sdk_client(site: PostgresSite) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {site.token}"}, timeout=TIMEOUT)
    url = site.server.url("/mcp")
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        yield client


async def create_account(client: Client, name: str) -> types.CallToolResult:
    return await asyncio.wait_for(client.call_tool("account_create", {"name": name, "tenant": "north"}), TIMEOUT)


async def list_items(client: Client) -> types.CallToolResult:
    return await asyncio.wait_for(client.call_tool("items", {"limit": 5}), TIMEOUT)


def assert_created(result: types.CallToolResult, name: str) -> None:
    assert result.is_error is False, result
    assert result.structured_content is not None
    [row] = result.structured_content["results"]
    assert row["name"] == name


def accounts(site: PostgresSite, *names: str) -> set[str]:
    rows = query(site.url, "SELECT name FROM testapp_account WHERE name = ANY(%s)", list(names))
    return {name for (name,) in rows}


def audited(site: PostgresSite) -> dict[str, tuple[str, str]]:
    """The outcome and message of every recorded account_create call, by the name it was given."""
    rows = query(
        site.url, "SELECT arguments, outcome, message FROM mcp_tools_toolcall WHERE tool_name = %s", "account_create"
    )
    return {_arguments(arguments)["name"]: (outcome, message) for arguments, outcome, message in rows}


def _arguments(stored: Any) -> dict[str, Any]:
    return json.loads(stored) if isinstance(stored, str) else stored


async def test_a_call_whose_connection_is_cut_gets_a_clear_error_and_writes_nothing(checked: PostgresSite):
    async with sdk_client(checked) as client:
        before = await create_account(client, "before-cut")
        slow = asyncio.ensure_future(create_account(client, "slow-cut"))
        await asyncio.to_thread(wait_for_sleeper, checked.url, TIMEOUT)
        ended = await asyncio.to_thread(terminate_backends, checked.url)
        cut = await slow
        after = await create_account(client, "after-cut")
        listed = await list_items(client)

    assert ended >= 2  # the sleeping insert's connection, and at least the audit trail's
    assert_created(before, "before-cut")
    assert cut.is_error is True
    assert cut.content == [types.TextContent(type="text", text=DATABASE_UNAVAILABLE)]
    assert_created(after, "after-cut")
    assert listed.is_error is False and listed.structured_content is not None
    assert len(listed.structured_content["results"]) == 5
    assert accounts(checked, "before-cut", "slow-cut", "after-cut") == {"before-cut", "after-cut"}
    assert {name: audited(checked)[name] for name in ("before-cut", "slow-cut", "after-cut")} == {
        "before-cut": ("ok", ""),
        "slow-cut": ("error", DATABASE_UNAVAILABLE),
        "after-cut": ("ok", ""),
    }


async def test_connections_cut_while_idle_are_replaced_before_the_next_calls(checked: PostgresSite):
    names = [f"idle-{n}" for n in range(6)]
    async with sdk_client(checked) as client:
        warmed = [await list_items(client), await create_account(client, "idle-warm")]
        ended = await asyncio.to_thread(terminate_backends, checked.url)
        created = [await create_account(client, name) for name in names]
        listed = await list_items(client)

    assert ended >= 2
    assert [result.is_error for result in warmed] == [False, False]
    for result, name in zip(created, names, strict=True):
        assert_created(result, name)
    assert listed.is_error is False
    assert accounts(checked, *names) == set(names)
    calls = audited(checked)
    assert {name: calls[name] for name in names} == {name: ("ok", "") for name in names}


async def test_without_health_checks_a_lost_idle_connection_fails_at_most_its_call_and_in_band(
    unchecked: PostgresSite,
):
    names = [f"unchecked-{n}" for n in range(6)]
    async with sdk_client(unchecked) as client:
        warmed = [await list_items(client), await create_account(client, "unchecked-warm")]
        ended = await asyncio.to_thread(terminate_backends, unchecked.url)
        results = [await create_account(client, name) for name in names]
        listed = [await list_items(client) for _ in range(3)]

    assert ended >= 2
    assert [result.is_error for result in warmed] == [False, False]
    unavailable = [types.TextContent(type="text", text=DATABASE_UNAVAILABLE)]
    created = {name for result, name in zip(results, names, strict=True) if not result.is_error}
    for result, name in zip(results, names, strict=True):
        if result.is_error:
            assert result.content == unavailable
        else:
            assert_created(result, name)
    assert all(result.is_error is False or result.content == unavailable for result in listed)
    assert accounts(unchecked, *names) == created
    calls = audited(unchecked)
    assert {name: calls[name] for name in names} == {
        name: ("ok", "") if name in created else ("error", DATABASE_UNAVAILABLE) for name in names
    }


async def healthy_again(http: httpx.AsyncClient, server: ServerProcess) -> httpx.Response:
    """The first 200 of the health check, which keeps a result for a moment (and has no event to wait for)."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            reply = await http.get(server.url("/mcp/health"))
            if reply.status_code == 200:
                return reply
            await asyncio.sleep(HEALTH_POLL_SECONDS)


def create_request(request_id: int, name: str) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": "account_create", "arguments": {"name": name, "tenant": "north"}})


def tool_text(reply: httpx.Response) -> tuple[bool, str]:
    """Whether the call's result is an error, and its text."""
    assert reply.status_code == 200, reply.text
    result = reply.json()["result"]
    return result["isError"], result["content"][0]["text"]


def assert_unavailable(reply: httpx.Response) -> None:
    """Refused for the database, whichever step met it first: HTTP 503, a JSON-RPC error or the call's result."""
    assert reply.status_code in (200, 503), reply.text
    body = reply.json()
    if "error" in body:
        assert body["error"] == {"code": UNAVAILABLE_CODE, "message": DATABASE_UNAVAILABLE}
    else:
        assert reply.status_code == 200
        assert (body["result"]["isError"], body["result"]["content"]) == (
            True,
            [{"type": "text", "text": DATABASE_UNAVAILABLE}],
        )


async def test_a_database_restart_fails_the_call_in_flight_and_calls_while_it_is_down_then_all_go_on(
    restartable: PostgresSite, cluster: Cluster
):
    server = restartable.server
    session = LegacySession(restartable.token)
    try:
        await session.initialize(server)
        before = await session.post(server, create_request(1, "before-restart"))
        slow = asyncio.ensure_future(session.post(server, create_request(2, "slow-restart")))
        await asyncio.to_thread(wait_for_sleeper, restartable.url, TIMEOUT)
        await asyncio.to_thread(cluster.restart)
        cut = await slow
        after = await session.post(server, create_request(3, "after-restart"))

        await asyncio.to_thread(cluster.stop)
        down = [
            await session.post(server, create_request(4, "while-down")),
            # A new session: its row cannot be written.
            await session.http.post(server.url("/mcp"), json=request(0, "initialize", initialize_params(LATEST))),
        ]
        health_down = await session.http.get(server.url("/mcp/health"))
        with pytest.raises(InvalidStatus) as handshake:
            async with mcp_websocket(server.ws_url(), restartable.token):
                pass
        await asyncio.to_thread(cluster.start)
        back = await session.post(server, create_request(5, "back-up"))
        health_back = await healthy_again(session.http, server)
    finally:
        await session.aclose()

    assert tool_text(before)[0] is False
    assert tool_text(cut) == (True, DATABASE_UNAVAILABLE)
    assert tool_text(after)[0] is False
    for reply in down:
        assert_unavailable(reply)
    assert handshake.value.response.status_code == 503
    assert json.loads(handshake.value.response.body or b"{}")["error"] == {
        "code": UNAVAILABLE_CODE,
        "message": DATABASE_UNAVAILABLE,
    }
    assert (health_down.status_code, health_down.json()) == (503, {"status": "unavailable", "failed": ["database"]})
    assert tool_text(back)[0] is False
    assert health_back.json() == {"status": "ok"}
    names = ("before-restart", "slow-restart", "after-restart", "while-down", "back-up")
    assert accounts(restartable, *names) == {"before-restart", "after-restart", "back-up"}
    calls = audited(restartable)
    # The rows of calls that ended while the database was down could not be written (the worker logs them).
    assert {name: calls[name] for name in ("before-restart", "after-restart", "back-up")} == {
        name: ("ok", "") for name in ("before-restart", "after-restart", "back-up")
    }
    assert calls.get("slow-restart", ("error", DATABASE_UNAVAILABLE)) == ("error", DATABASE_UNAVAILABLE)

"""Calls in flight in the admin: a uvicorn server, the official SDK client over Streamable HTTP, and the admin
driven over HTTP as a browser would.

``slow_count`` reports a first step and then waits until its process's gate opens, so it runs until cancelled.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_tools.server.running_calls import ADMIN_CANCELLED
from tests.live.admin_client import AdminClient
from tests.live.servers import ServerProcess
from tests.live.sites import Site
from tests.live.websocket_client import mcp_websocket

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
# A row is written after RUNNING_CALLS_VISIBLE_SECONDS (2 s) at the sweeper's next tick (1 s).
SHOWN_WITHIN = 10
CHANGELIST = "/admin/mcp_tools/runningcall/"
ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
CELL = re.compile(r'<t[dh] class="field-(\w+)[^"]*">(.*?)</t[dh]>', re.S)
LINK = re.compile(r"/admin/mcp_tools/runningcall/(\d+)/change/")


@asynccontextmanager
async def sdk_client(server: ServerProcess, token: str, mode: str = "legacy") -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(server.url("/mcp"), http_client=http), mode=mode) as client:
        yield client


@asynccontextmanager
async def signed_in(server: ServerProcess, username: str, password: str) -> AsyncIterator[AdminClient]:
    async with AdminClient(server.base_url) as client:
        await client.login(username, password)
        yield client


def mutate(site: Site, *args: str) -> Any:
    return json.loads(site.run("-m", "tests.live.mutate", *args).stdout)


def listed(html: str) -> list[dict[str, str]]:
    """The rows of the calls-in-flight change list: each column's text, and the row's primary key."""
    table = html.split('id="result_list"', 1)[1] if 'id="result_list"' in html else ""
    rows = []
    for row in ROW.findall(table.split("<tbody>", 1)[-1]):
        cells = {name: re.sub(r"<[^>]+>", "", text).strip() for name, text in CELL.findall(row)}
        link = LINK.search(row)
        if link:
            cells["pk"] = link.group(1)
        rows.append(cells)
    return rows


async def shown(admin: AdminClient, tool: str) -> dict[str, str]:
    """The change-list row of ``tool``'s call, once its process has written it (polled: no event exists)."""
    deadline = time.monotonic() + SHOWN_WITHIN
    while True:
        rows = [row for row in listed((await admin.get(CHANGELIST)).text) if row.get("tool_name") == tool]
        if rows:
            return rows[0]
        assert time.monotonic() < deadline, f"no call of {tool} appeared in the admin"
        await asyncio.sleep(0.2)


async def gone(admin: AdminClient, tool: str) -> None:
    """Wait until no row of ``tool`` is listed (polled: no event exists)."""
    deadline = time.monotonic() + SHOWN_WITHIN
    while any(row.get("tool_name") == tool for row in listed((await admin.get(CHANGELIST)).text)):
        assert time.monotonic() < deadline, f"the call of {tool} is still listed"
        await asyncio.sleep(0.2)


def started(client: Client, steps: int = 1) -> tuple[asyncio.Task[Any], asyncio.Event]:
    """A ``slow_count`` call in flight, and an event set once its first step is reported."""
    first_step = asyncio.Event()

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        first_step.set()

    call = asyncio.ensure_future(client.call_tool("slow_count", {"steps": steps}, progress_callback=progress))
    return call, first_step


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto: the 2026-07-28 revision, stateless
async def test_a_long_call_is_listed_and_an_administrator_cancelling_it_answers_the_client(
    uvicorn_server: ServerProcess, live_site: Site, mode: str
):
    async with (
        sdk_client(uvicorn_server, live_site.seeded.token, mode) as client,
        signed_in(uvicorn_server, **live_site.seeded.admin) as admin,
    ):
        call, first_step = started(client)
        await asyncio.wait_for(first_step.wait(), TIMEOUT)
        row = await shown(admin, "slow_count")
        changelist = await admin.post(
            CHANGELIST, {"action": "cancel_calls", "index": "0", "_selected_action": [row["pk"]]}
        )
        result = await asyncio.wait_for(call, TIMEOUT)
        await gone(admin, "slow_count")
        after = await asyncio.wait_for(client.call_tool("add", {"a": 2, "b": 3}), TIMEOUT)

    assert changelist.status_code == 302
    assert (row["caller"], row["tool_name"], row["transport"]) == (live_site.seeded.user, "slow_count", "http")
    assert re.fullmatch(r"\d+ s", row["age"]), row["age"]
    assert result.is_error
    assert result.content == [types.TextContent(type="text", text=ADMIN_CANCELLED)]
    assert await asyncio.to_thread(mutate, live_site, "last-outcome", "slow_count") == ["cancelled", ADMIN_CANCELLED]
    assert await asyncio.to_thread(mutate, live_site, "running-calls") == []
    # The session goes on.
    assert after.structured_content == {"result": 5}


async def test_a_call_is_cancelled_from_its_own_page(uvicorn_server: ServerProcess, live_site: Site):
    async with (
        sdk_client(uvicorn_server, live_site.seeded.token) as client,
        signed_in(uvicorn_server, **live_site.seeded.admin) as admin,
    ):
        call, first_step = started(client)
        await asyncio.wait_for(first_step.wait(), TIMEOUT)
        row = await shown(admin, "slow_count")
        page = await admin.get(f"{CHANGELIST}{row['pk']}/change/")
        cancelled = await admin.post(f"{CHANGELIST}{row['pk']}/cancel/", {})
        result = await asyncio.wait_for(call, TIMEOUT)
        await gone(admin, "slow_count")

    assert 'id="cancel-call-form"' in page.text
    assert cancelled.status_code == 302
    assert result.is_error
    assert result.content == [types.TextContent(type="text", text=ADMIN_CANCELLED)]


async def test_a_call_over_a_websocket_is_listed_and_cancelled_with_an_answer(
    uvicorn_server: ServerProcess, live_site: Site
):
    async with (
        mcp_websocket(uvicorn_server.ws_url(), live_site.seeded.token) as ws,
        signed_in(uvicorn_server, **live_site.seeded.admin) as admin,
    ):
        await ws.initialize()
        call = asyncio.ensure_future(ws.request("tools/call", {"name": "slow_count", "arguments": {"steps": 1}}))
        row = await shown(admin, "slow_count")
        await admin.post(f"{CHANGELIST}{row['pk']}/cancel/", {})
        reply = await asyncio.wait_for(call, TIMEOUT)
        await gone(admin, "slow_count")

    assert row["transport"] == "websocket"
    assert reply["result"] == {"content": [{"type": "text", "text": ADMIN_CANCELLED}], "isError": True}


async def test_staff_without_the_cancel_permission_see_calls_but_cannot_cancel_them(
    uvicorn_server: ServerProcess, live_site: Site
):
    await asyncio.to_thread(mutate, live_site, "staff", "watcher", "view_runningcall")
    async with (
        sdk_client(uvicorn_server, live_site.seeded.token) as client,
        signed_in(uvicorn_server, "watcher", "watcher") as watcher,
        signed_in(uvicorn_server, **live_site.seeded.admin) as admin,
    ):
        call, first_step = started(client)
        await asyncio.wait_for(first_step.wait(), TIMEOUT)
        row = await shown(watcher, "slow_count")
        listing = await watcher.get(CHANGELIST)
        page = await watcher.get(f"{CHANGELIST}{row['pk']}/change/")
        by_action = await watcher.post(
            CHANGELIST, {"action": "cancel_calls", "index": "0", "_selected_action": [row["pk"]]}
        )
        by_page = await watcher.post(f"{CHANGELIST}{row['pk']}/cancel/", {})
        untouched = await asyncio.to_thread(mutate, live_site, "running-calls")
        still_running = not call.done()
        await admin.post(f"{CHANGELIST}{row['pk']}/cancel/", {})
        await asyncio.wait_for(call, TIMEOUT)

    assert "_selected_action" not in listing.text
    assert 'id="cancel-call-form"' not in page.text
    assert by_action.status_code == 200  # the change list again: no action is available
    assert by_page.status_code == 403
    assert untouched == [["slow_count", False]]
    assert still_running


async def test_fast_calls_never_write_a_row(uvicorn_server: ServerProcess, live_site: Site):
    async with sdk_client(uvicorn_server, live_site.seeded.token) as client:
        for a in range(100):
            result = await asyncio.wait_for(client.call_tool("add", {"a": a, "b": 1}), TIMEOUT)
            assert result.structured_content == {"result": a + 1}

    assert await asyncio.to_thread(mutate, live_site, "running-calls") == []


async def test_a_stale_row_is_hidden_and_pruned_by_a_process_that_writes_its_own(
    uvicorn_server: ServerProcess, live_site: Site
):
    await asyncio.to_thread(mutate, live_site, "stale-call", "ghost")
    async with (
        sdk_client(uvicorn_server, live_site.seeded.token) as client,
        signed_in(uvicorn_server, **live_site.seeded.admin) as admin,
    ):
        before = listed((await admin.get(CHANGELIST)).text)
        call, first_step = started(client)
        await asyncio.wait_for(first_step.wait(), TIMEOUT)
        row = await shown(admin, "slow_count")
        rows = await asyncio.to_thread(mutate, live_site, "running-calls")
        await admin.post(f"{CHANGELIST}{row['pk']}/cancel/", {})
        await asyncio.wait_for(call, TIMEOUT)

    assert before == []
    assert rows == [["slow_count", False]]


async def test_calls_of_every_worker_are_listed_and_cancelled_through_any_of_them(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    async with (
        sdk_client(a, shared_site.seeded.token) as on_a,
        sdk_client(b, shared_site.seeded.token) as on_b,
        signed_in(b, **shared_site.seeded.admin) as admin,
    ):
        call_a, first_a = started(on_a)
        call_b, first_b = started(on_b)
        await asyncio.wait_for(asyncio.gather(first_a.wait(), first_b.wait()), TIMEOUT)
        deadline = time.monotonic() + SHOWN_WITHIN
        while len(rows := listed((await admin.get(CHANGELIST)).text)) < 2:
            assert time.monotonic() < deadline, rows
            await asyncio.sleep(0.2)
        cancelled = await admin.post(
            CHANGELIST, {"action": "cancel_calls", "index": "0", "_selected_action": [row["pk"] for row in rows]}
        )
        results = await asyncio.wait_for(asyncio.gather(call_a, call_b), TIMEOUT)
        await gone(admin, "slow_count")

    assert cancelled.status_code == 302
    assert [row["tool_name"] for row in rows] == ["slow_count", "slow_count"]
    assert len({row["process"] for row in rows}) == 2
    for result in results:
        assert result.content == [types.TextContent(type="text", text=ADMIN_CANCELLED)]

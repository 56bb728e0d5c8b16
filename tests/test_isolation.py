"""Isolation between users on a live server: one user's flood of slow sync calls leaves others' calls fast.

Bob's sync callable and model-query calls are timed alone, then while alice holds every call she may make
with a slow sync tool from more sessions than her limit; the bound is relative to bob's own times alone.

The server runs with ``MAX_CALLS_PER_USER`` 4, ``TOOL_THREADS`` 4 and ``USER_THREADS`` 2: a user holds at
most two of the four threads, so another user's sync calls never wait for one. ``hold`` and ``hang`` hold
their thread, deaf to cancellation, while a file the test owns exists; ``hang`` has a time limit of 1 s and
at most one call per user.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_tools.access.user_calls import too_many
from tests.live.servers import ServerProcess
from tests.live.sites import Site, sqlite_switches

pytestmark = pytest.mark.live

TIMEOUT = 10
LIMIT = 4
SESSIONS = 8
ROUNDS = 20
SWITCHES = {"MCP_TEST_MAX_CALLS_PER_USER": str(LIMIT), "MCP_TEST_TOOL_THREADS": "4", "MCP_TEST_USER_THREADS": "2"}


@pytest.fixture(scope="module")
def isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, dict[str, str]]]:
    """A server, and a token for each of alice (the noisy user), bob and carol."""
    workdir = tmp_path_factory.mktemp("isolation")
    site = Site(workdir, {**sqlite_switches(workdir), **SWITCHES})
    seed = site.prepare()
    site.run("-m", "tests.live.query_data")  # bob and carol, and model-query tools they may read
    tokens = {"alice": seed.token}
    for name in ("bob", "carol"):
        tokens[name] = mutate(site, "issue", name)
    mutate(site, "limit", "hang", "1", "1")
    with site.serve("server") as (server,):
        yield server, tokens


def mutate(site: Site, *args: str) -> Any:
    return json.loads(site.run("-m", "tests.live.mutate", *args).stdout)


@asynccontextmanager
async def sdk_client(server: ServerProcess, token: str) -> AsyncIterator[Client]:
    """The SDK's client in a legacy session of its own on the server's /mcp."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(server.url("/mcp"), http_client=http), mode="legacy") as client:
        yield client


@contextmanager
def flag() -> Iterator[Path]:
    """A file in the temporary directory that ``hold`` and ``hang`` wait on while it exists."""
    path = Path(tempfile.gettempdir()) / f"mcp-isolation-{secrets.token_hex(6)}"
    path.touch()
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await asyncio.wait_for(client.call_tool(name, arguments), TIMEOUT)


def text(result: types.CallToolResult) -> tuple[str, bool]:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text, result.is_error


async def timed_calls(client: Client) -> list[float]:
    """Seconds each of ROUNDS calls took, one after another: a sync callable and a model query in turn."""
    times = []
    for round_ in range(ROUNDS):
        started = time.perf_counter()
        if round_ % 2:
            result = await call(client, "items", {"order_by": "name"})
            times.append(time.perf_counter() - started)
            assert result.is_error is False and result.structured_content is not None, result
        else:
            result = await call(client, "multiply", {"x": round_, "y": 2})
            times.append(time.perf_counter() - started)
            assert (float(text(result)[0]), result.is_error) == (round_ * 2, False)
    return times


async def first_ended(calls: list[asyncio.Task[types.CallToolResult]], count: int) -> list[tuple[str, bool]]:
    """The answers of the first ``count`` calls to end."""
    ended: list[tuple[str, bool]] = []
    pending = set(calls)
    while len(ended) < count:
        done, pending = await asyncio.wait(pending, timeout=TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        assert done, "no call ended"
        ended += [text(task.result()) for task in done]
    return ended


async def test_a_user_flooding_slow_sync_calls_leaves_another_users_calls_as_fast_as_alone(isolated):
    server, tokens = isolated
    with flag() as held:
        async with sdk_client(server, tokens["bob"]) as bob, AsyncExitStack() as stack:
            alone = await timed_calls(bob)
            sessions = [await stack.enter_async_context(sdk_client(server, tokens["alice"])) for _ in range(SESSIONS)]
            calls = [
                asyncio.create_task(call(session, "hold", {"flag": held.name, "seconds": 30})) for session in sessions
            ]
            refused = await first_ended(calls, SESSIONS - LIMIT)
            loaded = await timed_calls(bob)
            holding = sum(not task.done() for task in calls)
            held.unlink()
            answered = [text(result) for result in await asyncio.gather(*calls)]

    # Only refusals can end while the file exists: the first to end are the calls over the limit.
    assert refused == [(too_many(LIMIT), True)] * (SESSIONS - LIMIT)
    assert holding == LIMIT
    assert answered.count(("released", False)) == LIMIT
    # Unisolated, bob's calls would wait for alice's: for as long as the file exists.
    assert statistics.median(loaded) <= 3 * statistics.median(alone)
    assert max(loaded) <= max(alone) + 20 * statistics.median(alone)


async def test_a_call_past_its_time_limit_keeps_its_place_until_its_thread_returns(isolated):
    server, tokens = isolated
    with flag() as hung:
        async with sdk_client(server, tokens["carol"]) as carol:
            timed_out = await call(carol, "hang", {"flag": hung.name, "seconds": 30})
            again = await call(carol, "hang", {"flag": hung.name})
            other_tool = await call(carol, "multiply", {"x": 2})
            hung.unlink()
            # Nothing tells a client that the thread has returned: ask until the place is free.
            deadline = time.monotonic() + TIMEOUT
            after = text(await call(carol, "hang", {"flag": hung.name}))
            while after != ("released", False) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                after = text(await call(carol, "hang", {"flag": hung.name}))

    assert text(timed_out) == ("The tool did not finish within 1 s.", True)
    assert text(again) == (too_many(1), True)
    assert text(other_tool) == ("4.0", False)
    assert after == ("released", False)

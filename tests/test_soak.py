"""A bounded soak: mixed load over every transport on two workers while Redis and PostgreSQL fail and return.

Two uvicorn processes share a private Redis (channel layer and cache) and PostgreSQL when one is configured
(SQLite otherwise). Clients over Streamable HTTP (the official SDK, both revisions), WebSocket and stdio call
async, sync and model-query tools without pause. Meanwhile the faults come in turn: Redis stopped until calls
have gone on without it, then started again; the database backends of the site terminated. Every call must be
answered: with its result, refused in-band (``isError``) with a reason these faults explain, or, when the
database connection is cut before the request reaches its method, refused with -32030; never -32603, never a
dropped session. The servers' memory, read after the warm-up and at the end, must stay flat.

``MCP_SOAK_SECONDS`` sets how long the load runs (20 s by default, as CI runs it; a few minutes for a soak).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_tools.exceptions import DATABASE_UNAVAILABLE
from tests.live import services
from tests.live.redis_server import REDIS_SERVER, RedisServer, private_redis
from tests.live.servers import ROOT, ServerProcess
from tests.live.sites import Site, postgres_database, sqlite_switches
from tests.live.websocket_client import mcp_websocket

pytest_plugins = ["tests.live.fixtures"]
pytestmark = [pytest.mark.live, pytest.mark.soak]

SECONDS = float(os.environ.get("MCP_SOAK_SECONDS", "20"))
TIMEOUT = 30
CALLS_IN_EACH_STATE = 20  # calls answered with Redis down, and again once it is back, before the next fault
RSS_GROWTH_BYTES = 32 * 1024 * 1024  # from the end of the warm-up to the end of the load, per server
# A JSON-RPC error that refuses a call cleanly under these faults: a request whose database connection was
# cut before it reached its method (HTTP 503).
REFUSAL_CODES = {DATABASE_UNAVAILABLE}
ALLOWED_FAILURE_TEXT = ("temporarily unavailable", "database is unavailable", "Too many", "Rate limit")


@dataclass
class Tally:
    """How every call ended, and events the faults wait on: a number of calls answered since a mark."""

    outcomes: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    answered: int = 0
    waiters: list[tuple[int, asyncio.Event]] = field(default_factory=list)

    def record(self, transport: str, outcome: str) -> None:
        self.outcomes[f"{transport} {outcome}"] += 1
        self.answered += 1
        for target, event in self.waiters:
            if self.answered >= target:
                event.set()

    def problem(self, transport: str, text: str) -> None:
        self.problems.append(f"{transport}: {text}")
        for _target, event in self.waiters:
            event.set()

    async def calls_answered(self, count: int) -> None:
        """Return once ``count`` more calls have been answered (bounded by the caller); fail at once on a
        call that was not."""
        event = asyncio.Event()
        self.waiters.append((self.answered + count, event))
        await event.wait()
        assert self.problems == [], self.problems


def outcome_of_result(is_error: bool, text: str) -> str | None:
    """ "ok", "refused" for an in-band refusal this test expects under faults; None for anything else."""
    if not is_error:
        return "ok"
    return "refused" if any(part in text for part in ALLOWED_FAILURE_TEXT) else None


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 2, "b": 3}),  # async
    ("multiply", {"x": 3, "y": 4}),  # sync, in the tool threads
    ("items", {}),  # a model query
]


def rss_bytes(server: ServerProcess) -> int:
    """The resident memory of a server process, from /proc."""
    assert server.process is not None
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


@dataclass
class Soak:
    """The site on a private Redis, its two workers, and what the clients saw."""

    site: Site
    redis: RedisServer
    servers: list[ServerProcess]
    database_url: str | None
    tally: Tally = field(default_factory=Tally)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def token(self) -> str:
        return self.site.seeded.token


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if not Path(REDIS_SERVER).exists():
        services.unavailable(f"Needs {REDIS_SERVER} to run a private Redis")
    with private_redis(tmp_path) as server:
        yield server


@pytest.fixture
def soak_site(tmp_path: Path, redis_server: RedisServer) -> Iterator[Site]:
    """The site on the private Redis (and PostgreSQL when configured), seeded, its two workers serving."""
    with ExitStack() as stack:
        switches = {
            "MCP_TEST_CHANNEL_LAYER": "redis",
            "MCP_TEST_REDIS_URL": redis_server.url,
            "MCP_TEST_REDIS_PREFIX": "mcp_tools_soak",
            "MCP_TEST_GROUP_NAME": "mcp_tools.tools.soak",
            "MCP_TEST_DEFAULT_RATE": "100000/h",  # every call passes through the rate-limit cache
        }
        database = services.postgres_url()
        if database:
            switches.update(stack.enter_context(postgres_database(database)))
        else:
            switches.update(sqlite_switches(tmp_path))
        site = Site(tmp_path, switches)
        site.prepare()
        site.run("-m", "tests.live.query_data")
        stack.enter_context(site.serve("a", "b"))
        yield site


Caller = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, str]]]


async def keep_calling(soak: Soak, transport: str, call: Caller) -> None:
    """Call the tools in turn until the soak ends; every answer is tallied, anything else is a problem."""
    turn = 0
    while not soak.stopping.is_set():
        name, arguments = CALLS[turn % len(CALLS)]
        turn += 1
        try:
            is_error, text = await call(name, arguments)
        except MCPError as exc:
            if exc.code not in REFUSAL_CODES:
                soak.tally.problem(transport, f"{name}: JSON-RPC error {exc.code} {exc.message}")
                return
            soak.tally.record(transport, f"refused {exc.code}")
            continue
        except Exception as exc:  # a dropped session: the test reports it
            soak.tally.problem(transport, f"{name}: {type(exc).__name__}: {exc}")
            return
        outcome = outcome_of_result(is_error, text)
        if outcome is None:
            soak.tally.problem(transport, f"{name}: unexpected tool error {text!r}")
        else:
            soak.tally.record(transport, outcome)


def result_text(result: Any) -> tuple[bool, str]:
    text = " ".join(getattr(block, "text", "") for block in result.content)
    return bool(result.is_error), text


async def sdk_http(soak: Soak, stack: AsyncExitStack, server: ServerProcess, mode: str) -> Caller:
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {soak.token}"}, timeout=TIMEOUT)
    )
    client = await stack.enter_async_context(
        Client(streamable_http_client(server.url("/mcp"), http_client=http), mode=mode)
    )
    await client.list_tools()  # the SDK checks results against the tools it has listed

    async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        return result_text(await client.call_tool(name, arguments))

    return call


async def websocket(soak: Soak, stack: AsyncExitStack, server: ServerProcess) -> Caller:
    client = await stack.enter_async_context(mcp_websocket(server.ws_url(), soak.token))
    await client.initialize()

    async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        reply = await client.request("tools/call", {"name": name, "arguments": arguments})
        if "error" in reply:
            raise MCPError(reply["error"]["code"], reply["error"]["message"])
        result = reply["result"]
        text = " ".join(block.get("text", "") for block in result["content"])
        return bool(result.get("isError")), text

    return call


async def stdio(soak: Soak, stack: AsyncExitStack) -> Caller:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_stdio", "--user", soak.site.seeded.user],
        env=soak.site.env,
        cwd=str(ROOT),
    )
    client = await stack.enter_async_context(Client(params, mode="2026-07-28", read_timeout_seconds=TIMEOUT))
    await client.list_tools()

    async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        return result_text(await client.call_tool(name, arguments))

    return call


def terminate_backends(database_url: str) -> int:
    """End every server-side connection to the site's database; returns how many were ended."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


async def inject_faults(soak: Soak, until: float) -> list[str]:
    """Redis down and back, then the database's connections cut, in turn until ``until``; what was done."""
    loop = asyncio.get_running_loop()
    done: list[str] = []
    while loop.time() < until:
        await asyncio.to_thread(soak.redis.stop, True)
        done.append("redis stopped")
        await soak.tally.calls_answered(CALLS_IN_EACH_STATE)
        await asyncio.to_thread(soak.redis.start)
        done.append("redis started")
        await soak.tally.calls_answered(CALLS_IN_EACH_STATE)
        if soak.database_url:
            ended = await asyncio.to_thread(terminate_backends, soak.database_url)
            done.append(f"{ended} database connections ended")
            await soak.tally.calls_answered(CALLS_IN_EACH_STATE)
    return done


async def test_mixed_load_on_every_transport_survives_redis_and_database_faults_with_flat_memory(
    soak_site: Site, redis_server: RedisServer
) -> None:
    soak = Soak(soak_site, redis_server, soak_site.servers, soak_site.switches.get("MCP_TEST_DATABASE_URL"))
    a, b = soak.servers
    loop = asyncio.get_running_loop()
    async with AsyncExitStack() as stack:
        clients = {
            "http modern a": await sdk_http(soak, stack, a, "2026-07-28"),
            "http legacy b": await sdk_http(soak, stack, b, "legacy"),
            "websocket a": await websocket(soak, stack, a),
            "websocket b": await websocket(soak, stack, b),
            "stdio": await stdio(soak, stack),
        }
        load = [asyncio.ensure_future(keep_calling(soak, name, call)) for name, call in clients.items()]
        try:
            async with asyncio.timeout(TIMEOUT):
                await soak.tally.calls_answered(CALLS_IN_EACH_STATE * len(clients))  # warm-up
            warm = {server.name: rss_bytes(server) for server in soak.servers}
            end = loop.time() + SECONDS
            async with asyncio.timeout(SECONDS + 4 * TIMEOUT):
                faults = await inject_faults(soak, end)
        finally:
            soak.stopping.set()
            async with asyncio.timeout(TIMEOUT):
                await asyncio.gather(*load)
    grown = {server.name: rss_bytes(server) - warm[server.name] for server in soak.servers}

    assert soak.tally.problems == [], soak.tally.problems
    assert "redis stopped" in faults and "redis started" in faults
    # Rate limits fail closed while Redis is down: some calls were refused, and said why.
    assert any(" refused" in outcome for outcome in soak.tally.outcomes), soak.tally.outcomes
    for transport in clients:
        assert soak.tally.outcomes[f"{transport} ok"] > 0, soak.tally.outcomes
    assert all(growth < RSS_GROWTH_BYTES for growth in grown.values()), grown

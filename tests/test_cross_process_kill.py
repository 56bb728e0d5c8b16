"""A worker process killed with SIGKILL under load: two uvicorn processes share PostgreSQL and Redis.

Clients run legacy HTTP sessions, half opened on each process, calling the model-query tool
``account_create`` with names of their own. Once enough calls were answered by process A, it is killed;
its clients carry on with the same sessions on process B, and B's own clients never notice. Afterwards
every call that was answered has its account committed and its audit row recorded.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.live.asgi_http import request
from tests.live.legacy_http import LegacySession
from tests.live.servers import ServerProcess
from tests.live.sites import Site

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

CLIENTS_PER_PROCESS = 4
ANSWERED_BEFORE_KILL = 40  # calls answered by process A before it is killed
CALLS_AFTER_KILL = 5  # calls each client completes once A is gone
LOAD_TIMEOUT = 30


@dataclass
class Load:
    """What the clients saw: the accounts their answered calls created, and when process A has answered enough."""

    answered: list[str] = field(default_factory=list)  # names of the accounts the calls created
    answered_by_a: int = 0
    enough_on_a: asyncio.Event = field(default_factory=asyncio.Event)
    killed: asyncio.Event = field(default_factory=asyncio.Event)
    moved: set[int] = field(default_factory=set)  # clients that went on with their session on B


async def mutate(site: Site, *args: str) -> Any:
    completed = await asyncio.to_thread(site.run, *args)
    return json.loads(completed.stdout)


async def run_client(index: int, session: LegacySession, home: ServerProcess, other: ServerProcess, load: Load):
    server, after_kill, call = home, 0, 0
    while after_kill < CALLS_AFTER_KILL:
        call += 1
        name = f"killed-{index}-{call}"
        message = request(
            call, "tools/call", {"name": "account_create", "arguments": {"name": name, "tenant": "north"}}
        )
        try:
            reply = await session.post(server, message)
        except httpx.TransportError:
            # Only the killed process may drop a connection, and only once it is being killed.
            assert server is home and home.name == "a" and load.killed.is_set(), f"client {index} lost {server!r}"
            server = other
            load.moved.add(index)
            continue
        assert reply.status_code == 200, reply.text
        result = reply.json()["result"]
        assert result["isError"] is False, result
        [created] = result["structuredContent"]["results"]
        assert created["name"] == name
        load.answered.append(name)
        if server is home and home.name == "a":
            load.answered_by_a += 1
            if load.answered_by_a >= ANSWERED_BEFORE_KILL:
                load.enough_on_a.set()
        if load.killed.is_set():
            after_kill += 1


async def test_killing_a_worker_mid_load_loses_no_answered_call_and_its_sessions_go_on_elsewhere(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    await mutate(shared_site, "-m", "tests.live.query_data")
    load = Load()
    homes = [(a, b)] * CLIENTS_PER_PROCESS + [(b, a)] * CLIENTS_PER_PROCESS
    sessions = [LegacySession(shared_site.seeded.token) for _ in homes]
    try:
        for session, (home, _other) in zip(sessions, homes, strict=True):
            await session.initialize(home)
        async with asyncio.timeout(LOAD_TIMEOUT):
            clients = [
                asyncio.ensure_future(run_client(i, session, home, other, load))
                for i, (session, (home, other)) in enumerate(zip(sessions, homes, strict=True))
            ]
            # A client that fails before A has answered enough ends the wait with its error.
            enough = asyncio.ensure_future(load.enough_on_a.wait())
            await asyncio.wait([enough, *clients], return_when=asyncio.FIRST_COMPLETED)
            for client in clients:
                if client.done():
                    client.result()
            assert a.process is not None
            load.killed.set()  # first: a client may see the connection drop before kill() returns
            a.process.kill()
            await asyncio.to_thread(a.process.wait)
            await asyncio.gather(*clients)
    finally:
        for session in sessions:
            await session.aclose()

    audited = {
        row["name"] for row in await mutate(shared_site, "-m", "tests.live.mutate", "ok-calls", "account_create")
    }
    committed = set(await mutate(shared_site, "-m", "tests.live.mutate", "account-names"))
    assert load.answered_by_a >= ANSWERED_BEFORE_KILL
    assert set(load.answered) <= committed
    assert set(load.answered) <= audited
    assert load.moved == set(range(CLIENTS_PER_PROCESS))

"""Cancelling across processes: a legacy HTTP session's requests are cancelled, and the session deleted,
through whichever of two uvicorn processes (one database, a Redis channel layer) the client reaches.

The calls run ``slow_count``, which reports a first step and then waits until the process's gate opens
(the ``open_gate`` tool), so a call is known to be running once its progress arrives and runs until
cancelled or let through.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_tools.exceptions import INVALID_REQUEST
from tests.live.asgi_http import request
from tests.live.legacy_http import LegacySession, first_step, legacy_session, stream_end
from tests.live.servers import ServerProcess
from tests.live.sites import Site

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

SESSION_NOT_FOUND = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "Session not found"}}
OPENED = {"content": [{"type": "text", "text": "opened"}], "isError": False}


async def open_gate(session: LegacySession, server: ServerProcess) -> dict[str, Any]:
    reply = await session.post(server, request("gate", "tools/call", {"name": "open_gate", "arguments": {}}))
    assert reply.status_code == 200, reply.text
    return dict(reply.json()["result"])


async def mutate(site: Site, *args: str) -> Any:
    completed = await asyncio.to_thread(site.run, "-m", "tests.live.mutate", *args)
    return completed.stdout.strip().strip('"')


async def test_a_call_running_on_one_process_is_cancelled_through_the_other(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    async with legacy_session(shared_site.seeded.token, a) as session:
        async with session.call_stream(a, 11, "slow_count", {"steps": 1}) as running:
            await first_step(running, 11)
            cancelled = await session.cancel(b, 11)
            left = await stream_end(running)
        # The session goes on, on either process.
        listed = await session.post(a, request(12, "tools/list"))

    assert cancelled.status_code == 202
    assert left == []
    assert listed.status_code == 200


async def test_deleting_a_session_through_one_process_cancels_its_calls_and_streams_on_the_other(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    async with (
        legacy_session(shared_site.seeded.token, a) as session,
        session.get_stream(a) as get_stream,
        session.call_stream(a, 21, "slow_count", {"steps": 1}) as running,
    ):
        await first_step(running, 21)
        deleted = await session.delete(b)
        call_left = await stream_end(running)
        stream_left = await stream_end(get_stream)
        after = await session.post(a, request(22, "tools/list"))

    assert deleted.status_code == 200
    assert (call_left, stream_left) == ([], [])
    assert (after.status_code, after.json()) == (404, SESSION_NOT_FOUND)


async def test_another_user_can_neither_cancel_nor_delete_a_session_through_the_other_process(
    uvicorn_pair: tuple[ServerProcess, ServerProcess], shared_site: Site
):
    a, b = uvicorn_pair
    await mutate(shared_site, "user", "mallory")
    intruder = LegacySession(await mutate(shared_site, "issue", "mallory"))
    async with legacy_session(shared_site.seeded.token, a) as session:
        intruder.session_id = session.session_id
        async with session.call_stream(a, 31, "slow_count", {"steps": 1}) as running:
            await first_step(running, 31)
            cancel = await intruder.cancel(b, 31)
            delete = await intruder.delete(b)
            # Had either reached process A, the call would have ended before the gate opened (events of one
            # group arrive in order); instead it finishes with its result.
            opened = await open_gate(session, a)
            left = await stream_end(running)
        await intruder.aclose()

    assert (cancel.status_code, cancel.json()) == (404, SESSION_NOT_FOUND)
    assert (delete.status_code, delete.json()) == (404, SESSION_NOT_FOUND)
    assert opened == OPENED
    assert left == [
        {
            "jsonrpc": "2.0",
            "id": 31,
            "result": {
                "content": [{"type": "text", "text": '{"counted":1}'}],
                "structuredContent": {"counted": 1},
                "isError": False,
            },
        }
    ]

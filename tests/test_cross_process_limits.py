"""Limits and trust checks across two worker processes sharing PostgreSQL and the Redis layer and cache.

A legacy HTTP session's calls count against one ``MAX_CONCURRENT_CALLS`` (2 here) whichever process runs
them; a tool disabled or a token deleted through one process binds the session's requests on the other.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tools.exceptions import INVALID_PARAMS
from tests.live import services
from tests.live.admin_client import AdminClient
from tests.live.asgi_http import request
from tests.live.legacy_http import TIMEOUT, first_step, legacy_session, stream_end
from tests.live.servers import ServerProcess
from tests.live.sites import Site, shared_switches

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

LIMIT = 2
TOO_MANY = {"content": [{"type": "text", "text": f"Too many calls in progress (at most {LIMIT})."}], "isError": True}
ADDED = {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False}
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
TOOL_ADMIN = "mcp_tools/tool"


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, ServerProcess, ServerProcess]]:
    workdir = tmp_path_factory.mktemp("limits")
    with shared_switches(workdir, services.redis_url(), services.postgres_url()) as switches:
        site = Site(workdir, {**switches, "MCP_TEST_MAX_CONCURRENT_CALLS": str(LIMIT)})
        site.prepare()
        with site.serve("a", "b") as (a, b):
            yield site, a, b


def add(request_id: int, name: str = "add") -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": name, "arguments": {"a": 2, "b": 3}})


async def mutate(site: Site, *args: str) -> Any:
    completed = await asyncio.to_thread(site.run, "-m", "tests.live.mutate", *args)
    return json.loads(completed.stdout)


async def test_a_sessions_calls_on_both_processes_count_against_one_limit(
    limited: tuple[Site, ServerProcess, ServerProcess],
):
    site, a, b = limited
    async with (
        legacy_session(site.seeded.token, a) as session,
        session.call_stream(a, 1, "slow_count", {"steps": 1}) as on_a,
        session.call_stream(b, 2, "slow_count", {"steps": 1}) as on_b,
    ):
        await first_step(on_a, 1)
        await first_step(on_b, 2)
        third_on_a = await session.post(a, add(3))
        third_on_b = await session.post(b, add(4))
        # Cancelled through B, the call on A ends and gives its place back.
        await session.cancel(b, 1)
        left_on_a = await stream_end(on_a)
        after = await session.post(b, add(5))
        await session.cancel(a, 2)
        left_on_b = await stream_end(on_b)

    assert [reply.json()["result"] for reply in (third_on_a, third_on_b)] == [TOO_MANY, TOO_MANY]
    assert (left_on_a, left_on_b) == ([], [])
    assert after.json()["result"] == ADDED


async def test_a_tool_disabled_through_one_process_is_refused_by_the_other_once_its_stream_hears(
    limited: tuple[Site, ServerProcess, ServerProcess],
):
    site, a, b = limited
    seed = site.seeded
    async with (
        legacy_session(seed.token, a) as session,
        session.get_stream(a) as stream,
        AdminClient(b.base_url) as admin,
    ):
        await admin.login(**seed.admin)
        await admin.action(TOOL_ADMIN, "disable_tools", [seed.tools["multiply"]])
        heard = await asyncio.wait_for(stream.message(), TIMEOUT)
        refused = await session.post(a, request(6, "tools/call", {"name": "multiply", "arguments": {"x": 1}}))
        await admin.action(TOOL_ADMIN, "enable_tools", [seed.tools["multiply"]])

    assert heard == LIST_CHANGED
    assert refused.json()["error"]["code"] == INVALID_PARAMS
    assert refused.json()["error"]["message"] == "Unknown tool: multiply"


async def test_a_token_deleted_through_one_process_ends_its_stream_and_requests_on_the_other(
    limited: tuple[Site, ServerProcess, ServerProcess],
):
    site, a, b = limited
    secret = await mutate(site, "issue", site.seeded.user)
    token_id = await mutate(site, "token-id", secret)
    async with (
        legacy_session(secret, a) as session,
        session.get_stream(a) as stream,
        AdminClient(b.base_url) as admin,
    ):
        await admin.login(**site.seeded.admin)
        deleted = await admin.post(f"/admin/mcp_tools/accesstoken/{token_id}/delete/", {"post": "yes"})
        left = await stream_end(stream)
        on_a = await session.post(a, add(7))
        on_b = await session.post(b, add(8))

    assert deleted.status_code == 302
    assert left == []
    assert (on_a.status_code, on_b.status_code) == (401, 401)

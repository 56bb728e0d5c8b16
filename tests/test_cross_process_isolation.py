"""A user's calls across two worker processes sharing PostgreSQL and the Redis cache count against one limit.

Each process runs one of the user's calls, in a session of its own; ``MAX_CALLS_PER_USER`` is 2, so a
third call from a third session is refused by whichever process it reaches, though that process runs only
one of them itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tools.access.user_calls import too_many
from tests.live import services
from tests.live.asgi_http import request
from tests.live.legacy_http import first_step, legacy_session, stream_end
from tests.live.servers import ServerProcess
from tests.live.sites import Site, shared_switches

pytestmark = pytest.mark.live

LIMIT = 2
TOO_MANY = {"content": [{"type": "text", "text": too_many(LIMIT)}], "isError": True}
ADDED = {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, ServerProcess, ServerProcess]]:
    workdir = tmp_path_factory.mktemp("isolation")
    with shared_switches(workdir, services.redis_url(), services.postgres_url()) as switches:
        site = Site(workdir, {**switches, "MCP_TEST_MAX_CALLS_PER_USER": str(LIMIT)})
        site.prepare()
        with site.serve("a", "b") as (a, b):
            yield site, a, b


def add(request_id: int) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})


async def test_a_users_calls_in_two_processes_count_against_one_limit_until_they_end(
    pair: tuple[Site, ServerProcess, ServerProcess],
):
    site, a, b = pair
    token = site.seeded.token
    async with (
        legacy_session(token, a) as first,
        legacy_session(token, b) as second,
        legacy_session(token, a) as third,
        first.call_stream(a, 1, "slow_count", {"steps": 1}) as on_a,
        second.call_stream(b, 1, "slow_count", {"steps": 1}) as on_b,
    ):
        await first_step(on_a, 1)
        await first_step(on_b, 1)
        third_on_a = await third.post(a, add(2))
        third_on_b = await third.post(b, add(3))
        await first.cancel(a, 1)
        left = await stream_end(on_a)
        after = await third.post(b, add(4))
        await second.cancel(b, 1)
        await stream_end(on_b)

    assert [reply.json()["result"] for reply in (third_on_a, third_on_b)] == [TOO_MANY, TOO_MANY]
    assert left == []
    assert after.json()["result"] == ADDED

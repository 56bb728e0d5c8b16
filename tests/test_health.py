"""The health check at /mcp/health: 200 "ok" while the database, the cache and the channel layer answer, 200
"degraded" while only the cache or the layer fails (calls are still answered), 503 "unavailable" without the
database; each check named with its result, no credentials needed, nothing revealed. Served by real uvicorn
processes."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.live.servers import ServerProcess
from tests.live.sites import Site, sqlite_switches

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
OK = {"status": "ok", "checks": {"database": "ok", "cache": "ok", "channel_layer": "ok"}}
HEADERS = {"content-type": "application/json", "cache-control": "no-store"}
# Nothing listens on port 1 of the loopback: a connection is refused at once.
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"


def health(server: ServerProcess, method: str = "GET") -> httpx.Response:
    return httpx.request(method, server.url("/mcp/health"), timeout=TIMEOUT)


def head(reply: httpx.Response) -> dict[str, str]:
    return {name: reply.headers[name] for name in HEADERS}


@pytest.fixture(scope="module")
def broken_sites(live_site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """Servers whose channel layer and cache are a Redis nobody serves, and whose database cannot be opened."""
    workdir = tmp_path_factory.mktemp("broken")
    no_redis = Site(
        workdir,
        {**live_site.switches, "MCP_TEST_CHANNEL_LAYER": "redis", "MCP_TEST_REDIS_URL": UNREACHABLE_REDIS},
    )
    no_database = Site(workdir, sqlite_switches(workdir / "missing" / "directory"))
    with no_redis.serve("no-redis") as (without_redis,), no_database.serve("no-database") as (without_database,):
        yield {"channel_layer": without_redis, "database": without_database}


def test_a_healthy_server_answers_ok_without_credentials(uvicorn_server: ServerProcess):
    reply = health(uvicorn_server)

    assert (reply.status_code, head(reply), reply.json()) == (200, HEADERS, OK)


def test_only_get_and_head_are_answered(uvicorn_server: ServerProcess):
    posted = health(uvicorn_server, "POST")
    headed = health(uvicorn_server, "HEAD")

    assert (posted.status_code, posted.headers["allow"]) == (405, "GET, HEAD")
    assert headed.status_code == 200


def test_a_server_that_cannot_reach_redis_answers_200_degraded_naming_the_cache_and_the_layer(
    broken_sites: dict[str, ServerProcess],
):
    reply = health(broken_sites["channel_layer"])

    assert (reply.status_code, head(reply), reply.json()) == (
        200,
        HEADERS,
        {"status": "degraded", "checks": {"database": "ok", "cache": "failed", "channel_layer": "failed"}},
    )


def test_a_server_that_cannot_reach_its_database_answers_503_naming_only_the_check(
    broken_sites: dict[str, ServerProcess],
):
    reply = health(broken_sites["database"])

    assert (reply.status_code, head(reply), reply.json()) == (
        503,
        HEADERS,
        {"status": "unavailable", "checks": {"database": "failed", "cache": "ok", "channel_layer": "ok"}},
    )


def test_both_workers_sharing_postgresql_and_redis_answer_ok(uvicorn_pair: tuple[ServerProcess, ServerProcess]):
    replies = [health(server) for server in uvicorn_pair]

    assert [(reply.status_code, reply.json()) for reply in replies] == [(200, OK), (200, OK)]

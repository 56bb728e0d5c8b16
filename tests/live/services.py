"""Which external services the live tests use, and whether a missing one skips or fails.

Without ``MCP_REQUIRE_SERVICES=1`` a test that needs an unconfigured or unreachable service is skipped
with the reason; with it (as in CI) the same situation fails the test.
"""

from __future__ import annotations

import os
from typing import NoReturn

import psycopg
import pytest
import redis

CONNECT_TIMEOUT = 5


def required() -> bool:
    return os.environ.get("MCP_REQUIRE_SERVICES") == "1"


def unavailable(reason: str) -> NoReturn:
    if required():
        pytest.fail(f"{reason} (MCP_REQUIRE_SERVICES=1 makes this a failure)", pytrace=False)
    pytest.skip(reason)


def redis_url() -> str:
    """The reachable Redis of MCP_TEST_REDIS_URL; skips or fails without one."""
    url = os.environ.get("MCP_TEST_REDIS_URL")
    if not url:
        unavailable("Needs Redis: set MCP_TEST_REDIS_URL, e.g. redis://127.0.0.1:6379/0")
    client = redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=CONNECT_TIMEOUT)
    try:
        client.ping()
    except redis.RedisError as exc:
        problem = f"Redis at {url} is unreachable: {exc}"
    else:
        return url
    finally:
        client.close()
    unavailable(problem)


def postgres_url() -> str | None:
    """The reachable PostgreSQL of MCP_TEST_DATABASE_URL, or None when it is not set."""
    url = os.environ.get("MCP_TEST_DATABASE_URL")
    if not url:
        return None
    try:
        psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT).close()
    except psycopg.Error as exc:
        problem = f"PostgreSQL at {url} is unreachable: {exc}"
    else:
        return url
    unavailable(problem)

"""The shared cache's breaker: a failed cache is skipped for CACHE_RETRY_SECONDS, its outage logged once, and
rate limits fail open or closed as django-ratelimit's RATELIMIT_FAIL_OPEN says, never with an exception."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
import redis

from mcp_tools.access import cache_breaker, ratelimit
from mcp_tools.access.cache_breaker import Breaker, CacheUnavailable

# Nothing listens on port 1 of the loopback: a connection is refused at once.
UNREACHABLE = "redis://127.0.0.1:1/0"
TOOL = SimpleNamespace(id=1, name="add", rate_limit="5/m")
USER = SimpleNamespace(pk=1, is_authenticated=True)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    held = Clock()
    monkeypatch.setattr(cache_breaker.time, "monotonic", held.monotonic)
    return held


@pytest.fixture
def unreachable_cache(settings: Any) -> None:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": UNREACHABLE}}


class Failing:
    """Work that fails as a Redis that is down does, counting its attempts."""

    def __init__(self) -> None:
        self.attempts = 0
        self.down = True

    def __call__(self) -> str:
        self.attempts += 1
        if self.down:
            raise redis.ConnectionError("Connection refused")
        return "answered"


def test_a_failed_cache_is_left_alone_for_cache_retry_seconds_and_the_outage_logged_once(
    clock: Clock, caplog: pytest.LogCaptureFixture, settings: Any
):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CACHE_RETRY_SECONDS": 5}
    breaker, work = Breaker(), Failing()
    outcomes = []
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        for step in (0.0, 1.0, 4.9, 5.1, 6.0):
            clock.now = 1000.0 + step
            with pytest.raises(CacheUnavailable) as refused:
                breaker.call(work)
            outcomes.append((refused.value.failed, refused.value.retry_after))

    assert outcomes == [(True, 5), (False, 4), (False, 1), (True, 5), (False, 5)]
    assert work.attempts == 2
    assert [record.getMessage().split(" (")[0] for record in caplog.records] == ["The shared cache cannot be reached"]


def test_the_cache_is_used_again_once_it_answers_and_the_return_is_logged(
    clock: Clock, caplog: pytest.LogCaptureFixture
):
    breaker, work = Breaker(), Failing()
    with caplog.at_level(logging.WARNING, logger="mcp_tools"), pytest.raises(CacheUnavailable):
        breaker.call(work)
    clock.now += 60
    work.down = False
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        answers = [breaker.call(work), breaker.call(work)]

    assert answers == ["answered", "answered"]
    assert breaker.down is False
    assert [record.getMessage() for record in caplog.records][1:] == [
        "The shared cache answers again; rate limits and call counters use it again"
    ]


async def test_rate_limits_fail_closed_with_a_retry_delay_while_the_cache_is_down(unreachable_cache: None):
    first = await ratelimit.check(USER, None, TOOL, {})
    second = await ratelimit.check(USER, None, TOOL, {})

    assert isinstance(first, ratelimit.Unavailable) and isinstance(second, ratelimit.Unavailable)
    assert (first.first, second.first) == (True, False)  # one audit row per attempt that reached the cache
    assert first.message == "Rate limits are temporarily unavailable: retry after 5 s."


async def test_rate_limits_fail_open_while_the_cache_is_down_when_django_ratelimit_says_so(
    unreachable_cache: None, settings: Any
):
    settings.RATELIMIT_FAIL_OPEN = True

    assert [await ratelimit.check(USER, None, TOOL, {}) for _ in range(3)] == [None, None, None]


async def test_denied_calls_fail_closed_too_while_the_cache_is_down(unreachable_cache: None, settings: Any):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DENIED_RATE": "30/m"}

    refused = await ratelimit.check_denied(USER, None)

    assert isinstance(refused, ratelimit.Unavailable)

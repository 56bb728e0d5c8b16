"""A legacy HTTP session's calls in progress, counted in the cache: the limit, giving back, and an outage."""

from __future__ import annotations

import logging

import pytest

from mcp_tools.access import concurrency
from mcp_tools.access.concurrency import SessionCalls

LOCMEM = "django.core.cache.backends.locmem.LocMemCache"
REDIS = "django.core.cache.backends.redis.RedisCache"
# Nothing listens on port 1 of the loopback: a connection is refused at once.
UNREACHABLE = "redis://127.0.0.1:1/0"


@pytest.fixture
def counted(own_cache: str) -> None:
    """Counted in memory, and on Redis (one script round trip per take and per give-back)."""


async def test_a_session_takes_places_up_to_the_limit_and_gets_them_back_when_calls_end(counted):
    calls, other = SessionCalls("one"), SessionCalls("two")

    taken = [await calls.take(2, 60) for _ in range(3)]
    elsewhere = await other.take(2, 60)
    await calls.give_back()
    again = await calls.take(2, 60)

    assert (taken, elsewhere, again) == ([True, True, False], True, True)


async def test_an_unreachable_cache_counts_nothing_lets_the_calls_go_on_and_is_logged_once(settings, caplog):
    settings.CACHES = {"default": {"BACKEND": REDIS, "LOCATION": UNREACHABLE}}
    calls = SessionCalls("one")

    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        taken = [await calls.take(2, 60) for _ in range(3)]
        await calls.give_back()

    assert taken == [None, None, None]
    assert [record.getMessage().split(" (")[0] for record in caplog.records if record.name == "mcp_tools"] == [
        "The shared cache cannot be reached"
    ]


@pytest.mark.parametrize(
    ("backend", "shared"), [(LOCMEM, False), ("django.core.cache.backends.dummy.DummyCache", False), (REDIS, True)]
)
def test_only_a_cache_other_processes_read_counts_across_them(settings, backend, shared):
    settings.CACHES = {"default": {"BACKEND": backend, "LOCATION": UNREACHABLE}}

    assert concurrency.shared() is shared

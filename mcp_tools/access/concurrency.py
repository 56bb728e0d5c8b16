"""Calls in progress counted in the shared cache that every worker reads: a legacy session's, a user's.

A legacy session's requests, and a user's sessions, may reach any worker process, so
``MAX_CONCURRENT_CALLS`` and ``MAX_CALLS_PER_USER`` are counted where they all look: one counter per key
in the cache django-ratelimit uses (``RATELIMIT_USE_CACHE``), raised atomically when a call starts and
lowered when it ends. A worker killed mid-call never lowers it, so every start renews the counter's expiry
to the call's time limit plus ``MARGIN_SECONDS``: a killed worker's calls stop counting once the key has
started no call for that long. With a cache of one process (local memory, dummy) each process counts on
its own, as it does for the other transports, and so it does while the shared cache cannot be reached
(``cache_breaker`` logs the outage once; calls go on).
"""

from __future__ import annotations

import contextlib
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.signals import setting_changed
from django.dispatch import receiver

from mcp_tools.access.cache_breaker import CacheUnavailable, breaker

PROCESS_LOCAL_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)
PREFIX = "mcp_tools.calls."
MARGIN_SECONDS = 60.0


def cache_alias() -> str:
    return str(getattr(settings, "RATELIMIT_USE_CACHE", "default"))


def cache_backend() -> str:
    """The dotted path of the backend of the cache that rate limits and call counters use."""
    return str((getattr(settings, "CACHES", {}) or {}).get(cache_alias(), {}).get("BACKEND", ""))


def shared() -> bool:
    """Whether the cache is one that other worker processes read too (asked by every HTTP request, so
    answered from the settings once, until they change)."""
    answer = _shared[0]
    if answer is None:
        answer = _shared[0] = cache_backend() not in PROCESS_LOCAL_CACHES
    return answer


_shared: list[bool | None] = [None]


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CACHES", "RATELIMIT_USE_CACHE"):
        _shared[0] = None


class SharedCount:
    """The counter of calls in progress under one key, in every process."""

    def __init__(self, key: str) -> None:
        self.key = PREFIX + key

    async def take(self, limit: int, seconds: float) -> bool | None:
        """Count one more call that may run ``seconds``: True once counted, False (nothing counted) when
        ``limit`` are running, None when the cache cannot be reached (nothing counted either)."""
        try:
            # The cache may be Redis: keep its round trips off the event loop.
            taken = await sync_to_async(breaker.call, thread_sensitive=False)(
                _take, self.key, limit, seconds + MARGIN_SECONDS
            )
        except CacheUnavailable:
            return None  # the breaker logs the outage once
        return bool(taken)

    async def give_back(self) -> None:
        # A call the cache missed while down expires there.
        with contextlib.suppress(CacheUnavailable):
            await sync_to_async(breaker.call, thread_sensitive=False)(_give_back, self.key)

    def give_back_now(self) -> None:
        """``give_back`` from a thread that runs no event loop (a tool's thread that outlived its call)."""
        with contextlib.suppress(CacheUnavailable):
            breaker.call(_give_back, self.key)


class SessionCalls(SharedCount):
    """The counter of one session's calls in progress, in every process."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)


def _cache() -> BaseCache:
    return caches[cache_alias()]


def _take(key: str, limit: int, ttl: float) -> bool:
    cache = _cache()
    if cache.add(key, 1, ttl):
        return limit >= 1
    try:
        count = cache.incr(key)
    except ValueError:
        # It expired between the two steps: start it afresh.
        return _take(key, limit, ttl)
    cache.touch(key, ttl)
    if count > limit:
        cache.decr(key)
        return False
    return True


def _give_back(key: str) -> None:
    # A counter that expired meanwhile has nothing left to lower.
    with contextlib.suppress(ValueError):
        _cache().decr(key)

"""Calls in progress counted in the shared cache that every worker reads: a legacy session's, a user's.

A legacy session's requests, and a user's sessions, may reach any worker process, so
``MAX_CONCURRENT_CALLS`` and ``MAX_CALLS_PER_USER`` are counted where they all look: one counter per key
in the cache django-ratelimit uses (``RATELIMIT_USE_CACHE``), raised atomically when a call starts and
lowered when it ends. A worker killed mid-call never lowers it, so every start renews the counter's expiry
to the call's time limit plus ``MARGIN_SECONDS``: a killed worker's calls stop counting once the key has
started no call for that long. With a cache of one process (local memory, dummy) each process counts on
its own, as it does for the other transports, and so it does while the shared cache cannot be reached
(``cache_breaker`` logs the outage once; calls go on). On Redis each take and each give-back is one round
trip (``redis_counts``). A call's places are given back off its answer's path, together with those of the
other calls of its process that end meanwhile: the next count of the process's event loop carries them in its
own script (``carry``), so that an agent calling tool after tool pays one round trip a call; when no count
comes within ``HOLD_SECONDS`` they go on their own (with a cache that no count carries them to, at the loop's
next turn). Other processes may thus see a place held that long after its call ended, never less long. A
count of this process that cannot carry them waits for them to land (``settled``) before it counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.signals import setting_changed
from django.dispatch import receiver

from mcp_tools.access import redis_counts
from mcp_tools.access.cache_breaker import CacheUnavailable, breaker
from mcp_tools.loops import PerLoop

PROCESS_LOCAL_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)
PREFIX = "mcp_tools.calls."
MARGIN_SECONDS = 60.0
# How long places given back wait for the next count of their loop to carry them before going on their own.
HOLD_SECONDS = 0.005


def cache_alias() -> str:
    """The alias of the cache django-ratelimit uses (asked for every call, so read once, until the settings
    change)."""
    alias = _alias[0]
    if alias is None:
        alias = _alias[0] = str(getattr(settings, "RATELIMIT_USE_CACHE", "default"))
    return alias


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
_alias: list[str | None] = [None]


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CACHES", "RATELIMIT_USE_CACHE"):
        _shared[0], _alias[0] = None, None


class SharedCount:
    """The counter of calls in progress under one key, in every process."""

    def __init__(self, key: str) -> None:
        self.key = PREFIX + key

    async def take(self, limit: int, seconds: float) -> bool | None:
        """Count one more call that may run ``seconds``: True once counted, False (nothing counted) when
        ``limit`` are running, None when the cache cannot be reached (nothing counted either)."""
        await settled([self.key])
        ttl = seconds + MARGIN_SECONDS
        found = await loop_scripts()
        try:
            if found is not None:
                place = redis_counts.Counter(found.make_key(self.key), limit, int(ttl))
                return (await breaker.acall(found.take, [], [place])).refused_place is None
            # Another cache server: keep its round trips off the event loop.
            return bool(await sync_to_async(breaker.call, thread_sensitive=False)(_take_in_cache, self.key, limit, ttl))
        except CacheUnavailable:
            return None  # the breaker logs the outage once

    async def give_back(self) -> None:
        await give_back([self.key])


@dataclass(frozen=True)
class Counted:
    """A place counted ahead of its ``take``, with the call's rates (``call_counts``): ``taken`` is what
    ``take`` would have answered."""

    counter: SharedCount
    taken: bool | None


class SessionCalls(SharedCount):
    """The counter of one session's calls in progress, in every process."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)


async def give_back(keys: Sequence[str]) -> None:
    """Lower the counters of ``keys`` (one round trip on Redis); a call the cache missed while down expires there."""
    if not keys:
        return
    found = await loop_scripts()
    with contextlib.suppress(CacheUnavailable):
        if found is not None:
            await breaker.acall(found.give_back, [found.make_key(key) for key in keys])
        else:
            await sync_to_async(breaker.call, thread_sensitive=False)(_give_back, keys)


def give_back_now(keys: Sequence[str]) -> None:
    """``give_back`` from a thread that runs no event loop (a tool's thread that outlived its call)."""
    if keys:
        with contextlib.suppress(CacheUnavailable):
            breaker.call(_give_back, keys)


def give_back_later(keys: Sequence[str]) -> None:
    """``give_back`` off the caller's path: on the running loop, carried by its next count or sent with the
    give-backs of every other call that ends meanwhile, within ``HOLD_SECONDS``; at once on a thread that runs
    no loop."""
    if not keys:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        give_back_now(keys)
        return
    opened = _open_batch()
    if not opened:
        # Only the loop's own Redis client carries places with a count: elsewhere they go in the loop's next turn.
        carried = isinstance(redis_counts.built_on_loop(cache_alias()), redis_counts.LoopScripts)
        opened.append(_Batch(loop, opened, HOLD_SECONDS if carried else 0.0))
    opened[0].keys.extend(keys)


def carry() -> list[str]:
    """The places given back on this loop and not sent yet, taken for the count about to go to Redis to lower
    first, in its own script: they are no longer sent on their own. If that count fails, they are lost, as a
    give-back that fails is, and their counters free them when they expire."""
    opened = _open_batch()
    if not opened:
        return []
    batch = opened[0]
    batch.close()
    return batch.keys


class _Batch:
    """Places given back on one loop, held for its next count to carry, else sent together once the hold ends
    (at the loop's next turn where no count can carry them)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, opened: list[_Batch], hold: float) -> None:
        self.keys: list[str] = []
        self.loop, self.opened = loop, opened
        self.timer: asyncio.Handle = loop.call_later(hold, self.send) if hold > 0 else loop.call_soon(self.send)

    def close(self) -> None:
        """Take no more keys, and cancel the sending at the end of the hold."""
        self.timer.cancel()
        if self.opened and self.opened[0] is self:
            self.opened.pop()

    def send(self) -> None:
        """Send the places now, in a task that ``settled`` can wait for."""
        self.close()
        task = self.loop.create_task(give_back(self.keys))
        with _lock:
            _giving_back[task] = self.keys
        task.add_done_callback(_given_back)


_open_batch: PerLoop[list[_Batch]] = PerLoop(list)  # the loop's batch still taking keys, if any
_lock = threading.Lock()
_giving_back: dict[asyncio.Task[None], list[str]] = {}  # kept until sent, and waited for by ``settled``


def _given_back(task: asyncio.Task[None]) -> None:
    with _lock:
        _giving_back.pop(task, None)


async def settled(keys: Iterable[str], *, carrying: bool = False) -> None:
    """Wait for this loop's give-backs of ``keys`` still on their way, sending those still held unless the
    caller's count is ``carrying`` them: a call that follows another's answer must find the places that call
    held free again."""
    loop, wanted = asyncio.get_running_loop(), set(keys)
    opened = _open_batch()
    if opened and not carrying and not wanted.isdisjoint(opened[0].keys):
        opened[0].send()
    with _lock:
        pending = [
            task for task, given in _giving_back.items() if task.get_loop() is loop and not wanted.isdisjoint(given)
        ]
    if pending:
        await asyncio.wait(pending)


def cache() -> BaseCache:
    return caches[cache_alias()]


def scripts() -> redis_counts.Scripts | None:
    """The blocking Redis scripts, for a thread that runs no event loop, when the shared cache is Django's
    RedisCache."""
    return redis_counts.scripts(cache_alias())


async def loop_scripts() -> redis_counts.AnyScripts | None:
    """The running loop's Redis scripts that count in one round trip, when the shared cache is Django's
    RedisCache."""
    return await redis_counts.loop_scripts(cache_alias())


def _take_in_cache(key: str, limit: int, ttl: float) -> bool:
    shared_cache = cache()
    if shared_cache.add(key, 1, ttl):
        return limit >= 1
    try:
        count = shared_cache.incr(key)
    except ValueError:
        # It expired between the two steps: start it afresh.
        return _take_in_cache(key, limit, ttl)
    shared_cache.touch(key, ttl)
    if count > limit:
        shared_cache.decr(key)
        return False
    return True


def _give_back(keys: Sequence[str]) -> None:
    found = scripts()
    if found is not None:
        found.give_back([found.make_key(key) for key in keys])
        return
    for key in keys:
        # A counter that expired meanwhile has nothing left to lower.
        with contextlib.suppress(ValueError):
            cache().decr(key)

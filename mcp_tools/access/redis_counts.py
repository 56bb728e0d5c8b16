"""A call's counts in one Redis round trip: its rates and its places among the calls in progress.

When the shared cache is Django's ``RedisCache``, a Lua script counts every rate that applies to a call and
takes every place it needs, atomically, after lowering the places given back meanwhile (alone, it only gives
places back), so each costs one round trip rather than two or three per counter. The keys are the cache's
own (``cache.make_key``) and the counts plain integers, as Django's ``RedisCache`` stores them, so
``get_usage``, ``cache.get`` and ``cache.incr`` read the same counters. The clients are this project's own,
built from the cache's ``LOCATION`` and ``OPTIONS`` as ``RedisCache`` builds its own (the cache has no
public accessor for its client): each event loop has an asyncio client, so a call's counts are awaited on
the loop with no thread hop, and a thread that runs no loop uses a blocking one. Other caches
(django-redis, Memcached, a database) keep counting through the cache API.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import caches
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from mcp_tools.loops import PerLoop

if TYPE_CHECKING:
    import redis
    import redis.asyncio

REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"
# The cache's own key for a name: its KEY_PREFIX, VERSION and KEY_FUNCTION, read from its settings once.
MakeKey = Callable[[str], str]

# KEYS: places to give back first (carried with this count), then the rate counters, stage after stage, then
# the places to take. ARGV: the number of places given back, the number of stages, each stage's number of keys,
# then each rate key's limit and lifetime, then each place's limit and lifetime.
# A place given back is lowered only if its counter still exists (one that expired has nothing left to lower).
# A stage whose count goes over its limit ends the counting: later stages are not counted and no place is
# taken (a call refused by its token's rate does not count against the tool's). A place over its limit is
# given back with every place taken before it. Returns each rate key's count (0: not counted) and the
# number of the place refused (0: none; -1: none tried, a rate was over).
TAKE = """
local given = tonumber(ARGV[1])
for g = 1, given do
  if redis.call('EXISTS', KEYS[g]) == 1 then redis.call('DECR', KEYS[g]) end
end
local stages = tonumber(ARGV[2])
local arg = stages + 3
local rates = 0
for s = 1, stages do rates = rates + tonumber(ARGV[2 + s]) end
local counts = {}
for k = 1, rates do counts[k] = 0 end
local k = 0
for s = 1, stages do
  local over = false
  for _ = 1, tonumber(ARGV[2 + s]) do
    k = k + 1
    local key = KEYS[given + k]
    local count = redis.call('INCR', key)
    if count == 1 then redis.call('EXPIRE', key, ARGV[arg + 1]) end
    counts[k] = count
    if count > tonumber(ARGV[arg]) then over = true end
    arg = arg + 2
  end
  if over then return {counts, -1} end
end
local first = given + rates + 1
for p = first, #KEYS do
  local count = redis.call('INCR', KEYS[p])
  redis.call('EXPIRE', KEYS[p], ARGV[arg + 1])
  if count > tonumber(ARGV[arg]) then
    for q = first, p do redis.call('DECR', KEYS[q]) end
    return {counts, p - first + 1}
  end
  arg = arg + 2
end
return {counts, 0}
"""


@dataclass(frozen=True)
class Counter:
    """One counter to raise: its cache key (made), the count over which it refuses, its lifetime in seconds."""

    key: str
    limit: int
    ttl: int


@dataclass(frozen=True)
class Counted:
    """What the script counted: each rate key's count (0 when not counted), and which place was refused."""

    counts: list[int]
    refused_place: int | None  # the place's index; None when every place was taken
    rate_over: bool  # a rate was over: no place was tried


def _arguments(
    stages: Sequence[Sequence[Counter]], places: Sequence[Counter], given_back: Sequence[str]
) -> tuple[list[str], list[int]]:
    rates = [counter for stage in stages for counter in stage]
    args: list[int] = [len(given_back), len(stages), *(len(stage) for stage in stages)]
    for counter in (*rates, *places):
        args += [counter.limit, counter.ttl]
    return [*given_back, *(c.key for c in (*rates, *places))], args


def _given_back_only(keys: Sequence[str]) -> list[int]:
    """``TAKE``'s arguments for giving places back with nothing to count or take."""
    return [len(keys), 0]


def _counted(reply: Any) -> Counted:
    counts, refused = reply
    return Counted([int(c) for c in counts], int(refused) - 1 if int(refused) > 0 else None, int(refused) < 0)


class Scripts:
    """A blocking client and its script, for threads that run no event loop, and the cache's ``make_key``."""

    def __init__(self, client: redis.Redis, make_key: MakeKey) -> None:
        self.client, self.make_key = client, make_key
        self._take = client.register_script(TAKE)

    def take(
        self, stages: Sequence[Sequence[Counter]], places: Sequence[Counter], given_back: Sequence[str] = ()
    ) -> Counted:
        """Give back the places ``given_back`` (made keys), count the rates, stage by stage, then take the
        places, in one round trip."""
        keys, args = _arguments(stages, places, given_back)
        return _counted(self._take(keys=keys, args=args))

    def give_back(self, keys: Sequence[str]) -> None:
        """Lower each place's counter by one, in one round trip."""
        if keys:
            self._take(keys=list(keys), args=_given_back_only(keys))

    def close(self) -> None:
        self.client.connection_pool.disconnect()


class LoopScripts:
    """An event loop's own client and its script: a count is awaited on the loop, with no thread hop.

    A count made while another is on its way to Redis waits for it, and the counts that waited meanwhile go
    together as one pipeline: one round trip, and a fraction of the client's work per count. A count made
    alone goes at once.
    """

    def __init__(self, client: redis.asyncio.Redis, make_key: MakeKey) -> None:
        self.client, self.make_key = client, make_key
        self._take = client.register_script(TAKE)
        self._sending = False
        self._waiting: list[tuple[list[str], list[int], asyncio.Future[Any]]] = []

    async def take(
        self, stages: Sequence[Sequence[Counter]], places: Sequence[Counter], given_back: Sequence[str] = ()
    ) -> Counted:
        keys, args = _arguments(stages, places, given_back)
        if self._sending:
            reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._waiting.append((keys, args, reply))
            return _counted(await reply)
        self._sending = True
        try:
            return _counted(await self._take(keys=keys, args=args))
        finally:
            self._send_waiting()

    def _send_waiting(self) -> None:
        """Send the counts that waited, as one pipeline, or let the next count go at once."""
        waiting, self._waiting = self._waiting, []
        self._sending = bool(waiting)
        if waiting:
            asyncio.get_running_loop().create_task(self._send_together(waiting))

    async def _send_together(self, waiting: list[tuple[list[str], list[int], asyncio.Future[Any]]]) -> None:
        try:
            replies = await self._pipelined(waiting)
        except Exception as exc:
            replies = [exc] * len(waiting)
        finally:
            self._send_waiting()
        for (_keys, _args, reply), answer in zip(waiting, replies, strict=True):
            if reply.done():
                continue  # its caller is gone (and so are the places it took, which expire with their key)
            if isinstance(answer, Exception):
                reply.set_exception(answer)
            else:
                reply.set_result(answer)

    async def _pipelined(self, waiting: list[tuple[list[str], list[int], asyncio.Future[Any]]]) -> list[Any]:
        # The optional ``[redis]`` extra, as in ``connect``.
        from redis.exceptions import NoScriptError

        pipe = self.client.pipeline(transaction=False)
        for keys, args, _reply in waiting:
            pipe.evalsha(self._take.sha, len(keys), *keys, *args)
        replies: list[Any] = await pipe.execute(raise_on_error=False)
        # Redis lost the script (restarted, or SCRIPT FLUSH): each count that missed it goes again alone,
        # the first loading it; one that fails then fails alone, and the others keep what they counted.
        for index, answer in enumerate(replies):
            if isinstance(answer, NoScriptError):
                keys, args, _reply = waiting[index]
                try:
                    replies[index] = await self._take(keys=keys, args=args)
                except Exception as exc:
                    replies[index] = exc
        return replies

    async def give_back(self, keys: Sequence[str]) -> None:
        if keys:
            await self._take(keys=list(keys), args=_given_back_only(keys))

    async def close(self) -> None:
        await self.client.aclose(close_connection_pool=True)


class ThreadScripts:
    """The blocking client's scripts awaited from a loop, each in a thread: for a pool that has no asyncio
    counterpart (a class of the site's own)."""

    def __init__(self, scripts: Scripts) -> None:
        self.scripts, self.make_key = scripts, scripts.make_key

    async def take(
        self, stages: Sequence[Sequence[Counter]], places: Sequence[Counter], given_back: Sequence[str] = ()
    ) -> Counted:
        return await sync_to_async(self.scripts.take, thread_sensitive=False)(stages, places, given_back)

    async def give_back(self, keys: Sequence[str]) -> None:
        await sync_to_async(self.scripts.give_back, thread_sensitive=False)(keys)

    async def close(self) -> None:
        """The blocking client is the process's, closed with the settings that made it."""


AnyScripts = LoopScripts | ThreadScripts


def scripts(alias: str) -> Scripts | None:
    """The blocking scripts for the cache ``alias``, or None when it is not Django's RedisCache storing plain
    integers."""
    with _lock:
        if alias not in _built:
            _built[alias] = connect(alias)
        return _built[alias]


_lock = threading.Lock()
_built: dict[str, Scripts | None] = {}


async def loop_scripts(alias: str) -> AnyScripts | None:
    """The running loop's scripts for the cache ``alias`` (None when it is not Django's RedisCache storing
    plain integers); they are closed when the loop shuts down, or once the cache settings change."""
    clients = _per_loop()
    if clients.generation != _generation[0]:
        await clients.close()
        clients.generation = _generation[0]
    try:
        return clients.by_alias[alias]
    except KeyError:
        found = clients.by_alias[alias] = connect_on_loop(alias)
        await clients.keep_until_shutdown()
        return found


def built_on_loop(alias: str) -> AnyScripts | None:
    """The running loop's scripts for the cache ``alias`` if a count has built them; builds none."""
    return _per_loop().by_alias.get(alias)


class _LoopClients:
    """One loop's scripts by cache alias, closed by an async generator that the loop's shutdown closes
    (``shutdown_asyncgens``, which ``asyncio.run`` and every ASGI server's runner call before closing it)."""

    def __init__(self) -> None:
        self.by_alias: dict[str, AnyScripts | None] = {}
        self.generation = _generation[0]
        self._keeper: AsyncGenerator[None, None] | None = None

    async def keep_until_shutdown(self) -> None:
        if self._keeper is None:
            self._keeper = self._closed_at_shutdown()
            await anext(self._keeper)

    async def _closed_at_shutdown(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await self.close()

    async def close(self) -> None:
        found, self.by_alias = list(self.by_alias.values()), {}
        for scripts in found:
            if scripts is not None:
                await scripts.close()


_per_loop: PerLoop[_LoopClients] = PerLoop(_LoopClients)
_generation = [0]  # raised when the cache settings change: every loop's clients are then built afresh


@dataclass(frozen=True)
class _ClientSettings:
    """How ``RedisCache`` would build its client for an alias: its first server and its ``OPTIONS``, the
    pool and parser classes imported and kept apart, since each client kind maps them its own way."""

    url: str
    options: dict[str, Any]
    pool_class: Any  # a connection pool class; None: redis-py's default pool
    parser_class: Any  # a parser class, or None


def _client_settings(alias: str) -> _ClientSettings | None:
    """The settings of the cache ``alias``'s client, when it is Django's RedisCache storing plain integers,
    which INCR needs (another serializer may not)."""
    config: dict[str, Any] = (getattr(settings, "CACHES", {}) or {}).get(alias, {})
    options = dict(config.get("OPTIONS") or {})
    if config.get("BACKEND") != REDIS_CACHE or "serializer" in options:
        return None
    location = config.get("LOCATION", "")
    servers = re.split("[;,]", location) if isinstance(location, str) else list(location)
    pool_class, parser_class = _imported(options.pop("pool_class", None)), _imported(options.pop("parser_class", None))
    # RedisCache writes to its first server, and so does this.
    return _ClientSettings(servers[0], options, pool_class, parser_class)


def connect(alias: str) -> Scripts | None:
    """A new blocking client (and connection pool) for the cache ``alias``; ``scripts`` keeps one per process."""
    found = _client_settings(alias)
    if found is None:
        return None
    # redis-py is the optional ``[redis]`` extra: imported only for a cache that is Redis, which needs it too.
    import redis

    options = found.options if found.parser_class is None else {**found.options, "parser_class": found.parser_class}
    pool = (found.pool_class or redis.ConnectionPool).from_url(found.url, **options)
    return Scripts(redis.Redis(connection_pool=pool), caches[alias].make_key)


def connect_on_loop(alias: str) -> AnyScripts | None:
    """A new client for the running loop, for the cache ``alias``: redis-py's asyncio counterpart of the
    cache's pool class, or the blocking client in threads when it has none. The parser only decides how
    replies are read (hiredis or Python): the asyncio client picks its own."""
    found = _client_settings(alias)
    if found is None:
        return None
    # The optional ``[redis]`` extra, as in ``connect``.
    import redis.asyncio

    pool_class = _asyncio_counterpart(found.pool_class or redis.ConnectionPool, redis.asyncio)
    if pool_class is None:
        blocking = scripts(alias)
        return None if blocking is None else ThreadScripts(blocking)
    pool = pool_class.from_url(found.url, **found.options)
    return LoopScripts(redis.asyncio.Redis(connection_pool=pool), caches[alias].make_key)


def _asyncio_counterpart(pool_class: type, asyncio_redis: ModuleType) -> Any:
    """redis-py's asyncio pool of the same name (``redis.BlockingConnectionPool`` has
    ``redis.asyncio.BlockingConnectionPool``), or None for a class of another package."""
    module = pool_class.__module__
    if module != "redis" and not module.startswith("redis."):
        return None
    return getattr(asyncio_redis, pool_class.__name__, None)


def _imported(value: Any) -> Any:
    return import_string(value) if isinstance(value, str) else value


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CACHES", "RATELIMIT_USE_CACHE"):
        with _lock:
            old = list(_built.values())
            _built.clear()
            _generation[0] += 1
        for found in old:
            if found is not None:
                found.close()

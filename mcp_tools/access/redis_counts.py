"""A call's counts in one Redis round trip: its rates and its places among the calls in progress.

When the shared cache is Django's ``RedisCache``, a Lua script counts every rate that applies to a call and
takes every place it needs, atomically, and another gives places back, so each costs one round trip rather
than two or three per counter. The keys are the cache's own (``cache.make_key``) and the counts plain
integers, as Django's ``RedisCache`` stores them, so ``get_usage``, ``cache.get`` and ``cache.incr`` read
the same counters. The client is this process's own connection pool, built from the cache's
``LOCATION`` and ``OPTIONS`` as ``RedisCache`` builds its own: the cache has no public accessor for its
client. Other caches (django-redis, Memcached, a database) keep counting through the cache API.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    import redis

REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"

# KEYS: the rate counters, stage after stage, then the places. ARGV: the number of stages, each stage's
# number of keys, then each rate key's limit and lifetime, then each place's limit and lifetime.
# A stage whose count goes over its limit ends the counting: later stages are not counted and no place is
# taken (a call refused by its token's rate does not count against the tool's). A place over its limit is
# given back with every place taken before it. Returns each rate key's count (0: not counted) and the
# number of the place refused (0: none; -1: none tried, a rate was over).
TAKE = """
local stages = tonumber(ARGV[1])
local arg = stages + 2
local rates = 0
for s = 1, stages do rates = rates + tonumber(ARGV[1 + s]) end
local counts = {}
for k = 1, rates do counts[k] = 0 end
local k = 0
for s = 1, stages do
  local over = false
  for _ = 1, tonumber(ARGV[1 + s]) do
    k = k + 1
    local count = redis.call('INCR', KEYS[k])
    if count == 1 then redis.call('EXPIRE', KEYS[k], ARGV[arg + 1]) end
    counts[k] = count
    if count > tonumber(ARGV[arg]) then over = true end
    arg = arg + 2
  end
  if over then return {counts, -1} end
end
for p = rates + 1, #KEYS do
  local count = redis.call('INCR', KEYS[p])
  redis.call('EXPIRE', KEYS[p], ARGV[arg + 1])
  if count > tonumber(ARGV[arg]) then
    for q = rates + 1, p do redis.call('DECR', KEYS[q]) end
    return {counts, p - rates}
  end
  arg = arg + 2
end
return {counts, 0}
"""

# KEYS: places to give back. A counter that expired meanwhile has nothing left to lower.
GIVE_BACK = """
for k = 1, #KEYS do
  if redis.call('EXISTS', KEYS[k]) == 1 then redis.call('DECR', KEYS[k]) end
end
return #KEYS
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


class Scripts:
    """The client and its two scripts, built once per process for the cache's settings."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.take = client.register_script(TAKE)
        self.give_back = client.register_script(GIVE_BACK)


def scripts(alias: str) -> Scripts | None:
    """The scripts for the cache ``alias``, or None when it is not Django's RedisCache storing plain integers."""
    with _lock:
        if alias not in _built:
            _built[alias] = connect(alias)
        return _built[alias]


_lock = threading.Lock()
_built: dict[str, Scripts | None] = {}


def connect(alias: str) -> Scripts | None:
    """A new client (and connection pool) for the cache ``alias``; ``scripts`` keeps one per process."""
    config: dict[str, Any] = (getattr(settings, "CACHES", {}) or {}).get(alias, {})
    options = dict(config.get("OPTIONS") or {})
    # Another serializer may not store integers as plain integers, which INCR needs.
    if config.get("BACKEND") != REDIS_CACHE or "serializer" in options:
        return None
    # redis-py is the optional ``[redis]`` extra: imported only for a cache that is Redis, which needs it too.
    import redis

    location = config.get("LOCATION", "")
    servers = re.split("[;,]", location) if isinstance(location, str) else list(location)
    pool_class = _imported(options.pop("pool_class", None)) or redis.ConnectionPool
    parser_class = _imported(options.pop("parser_class", None))
    if parser_class is not None:
        options["parser_class"] = parser_class
    # RedisCache writes to its first server, and so does this.
    return Scripts(redis.Redis(connection_pool=pool_class.from_url(servers[0], **options)))


def _imported(value: Any) -> Any:
    return import_string(value) if isinstance(value, str) else value


def take(found: Scripts, stages: Sequence[Sequence[Counter]], places: Sequence[Counter]) -> Counted:
    """Count the rates, stage by stage, then take the places, in one round trip."""
    rates = [counter for stage in stages for counter in stage]
    args: list[int] = [len(stages), *(len(stage) for stage in stages)]
    for counter in (*rates, *places):
        args += [counter.limit, counter.ttl]
    counts, refused = found.take(keys=[c.key for c in (*rates, *places)], args=args)
    return Counted([int(c) for c in counts], int(refused) - 1 if int(refused) > 0 else None, int(refused) < 0)


def give_back(found: Scripts, keys: Sequence[str]) -> None:
    """Lower each place's counter by one, in one round trip."""
    if keys:
        found.give_back(keys=list(keys))


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CACHES", "RATELIMIT_USE_CACHE"):
        with _lock:
            old = list(_built.values())
            _built.clear()
        for found in old:
            if found is not None:
                found.client.connection_pool.disconnect()

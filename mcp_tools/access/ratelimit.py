"""Rate limits through django-ratelimit on the shared Django cache: per user and per token, per tool.

A site token's own ``rate_limit`` counts its calls across every tool, and binds whenever it is the lower
rate. Calls refused as denied or unknown count apart, against ``DENIED_RATE``, across every tool name. While
the cache cannot be reached, django-ratelimit's ``RATELIMIT_FAIL_OPEN`` decides: calls go uncounted (open),
or are refused with the time to retry after (closed, its default). On Redis every count of a call is made
in one round trip (``redis_counts``), on the keys and in the windows ``get_usage`` counts in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from asgiref.sync import sync_to_async
from django.conf import settings
from django_ratelimit.core import get_usage

from mcp_tools.access import concurrency, credentials, permissions, ratelimit_windows, redis_counts
from mcp_tools.access.cache_breaker import CacheUnavailable, breaker
from mcp_tools.access.concurrency import shared
from mcp_tools.conf import mcp_settings
from mcp_tools.validators import parse_rate

GROUP = "mcp_tools.call"
DENIED_GROUP = "mcp_tools.denied"
TOKEN_GROUP = "mcp_tools.token"


@dataclass(frozen=True)
class Limited:
    """The call was over its rate; the caller may retry after ``retry_after`` seconds.

    ``first`` says whether it is the first refusal of its counting window (for the user or the token).
    """

    rate: str
    retry_after: int
    first: bool = True

    @property
    def message(self) -> str:
        return f"Rate limit {self.rate} exceeded: retry after {self.retry_after} s."


@dataclass(frozen=True)
class Unavailable(Limited):
    """The call could not be counted (the cache is down) and rate limits fail closed."""

    @property
    def message(self) -> str:
        return f"Rate limits are temporarily unavailable: retry after {self.retry_after} s."


def calls_per_second(rate: str) -> float:
    calls, seconds = parse_rate(rate)
    return calls / seconds if seconds else 0.0


def rate_for(user: Any, entry: Any, overrides: dict[tuple[int, int | None], str]) -> str | None:
    """A group override for this tool, else one for every tool, else the tool's own rate, else the default.

    Among several groups the most generous override wins: an override exists to let a group do more.
    """
    if overrides:  # nearly always empty: no group's rates to look through
        groups = permissions.group_ids(user) if getattr(user, "is_authenticated", False) else frozenset()
        for tool_id in (entry.id, None):
            found = [overrides[(g, tool_id)] for g in groups if (g, tool_id) in overrides]
            if found:
                return max(found, key=calls_per_second)
    return entry.rate_limit or mcp_settings.DEFAULT_RATE or None


class Usage(NamedTuple):
    """One key's count against one rate, as ``get_usage`` reports it."""

    calls: int
    limit: int
    time_left: int
    over: bool


@dataclass(frozen=True)
class Stage:
    """One rate a call counts against, under each of its keys (the caller's user and its token)."""

    rate: str
    group: str
    keys: list[str]

    def windows(self) -> list[ratelimit_windows.Window]:
        return [ratelimit_windows.window(self.group, self.rate, key) for key in self.keys]

    def limited(self, usages: list[Usage]) -> Limited | None:
        """``Limited`` when a key's count is over."""
        worst: Limited | None = None
        for calls, limit, time_left, over in usages:
            if over:
                # The window's last second still counts for it: the next one opens a second later.
                retry = max(1, time_left + 1)
                first = calls <= limit + 1
                if worst is not None:
                    retry, first = max(retry, worst.retry_after), first or worst.first
                worst = Limited(self.rate, retry, first)
        return worst


def stages(user: Any, token: Any, entry: Any, overrides: dict[tuple[int, int | None], str]) -> list[Stage]:
    """The rates a call of ``entry`` counts against, in order: its token's own, then the tool's; a call over
    one is not counted against the next."""
    token_stage = _token_stage(token)
    found = [] if token_stage is None else [token_stage]
    rate = rate_for(user, entry, overrides)
    if rate:
        found.append(Stage(rate, f"{GROUP}:{entry.name}", _keys(user, token)))
    return found


def enabled() -> bool:
    """django-ratelimit's own switch: with ``RATELIMIT_ENABLE`` off nothing is counted."""
    return bool(getattr(settings, "RATELIMIT_ENABLE", True))


def unavailable(stage: Stage, outage: CacheUnavailable) -> Limited | None:
    """What a call gets while its rates cannot be counted: nothing when they fail open, else a refusal."""
    if getattr(settings, "RATELIMIT_FAIL_OPEN", False):
        return None
    # One audit row per failed attempt to reach the cache, not one per call the open breaker refuses.
    return Unavailable(stage.rate, outage.retry_after, first=outage.failed)


def _keys(user: Any, token: Any) -> list[str]:
    keys = [f"user:{user.pk}" if getattr(user, "is_authenticated", False) else "anonymous"]
    if token is not None:
        keys.append(credentials.identity(token))
    return keys


def _count(stage: Stage) -> Limited | None:
    try:
        return breaker.call(_count_by_key, stage)
    except CacheUnavailable as outage:
        return unavailable(stage, outage)


async def _count_in_redis(found: redis_counts.AnyScripts, stage: Stage) -> Limited | None:
    windows = stage.windows()
    try:
        counted = await breaker.acall(found.take, [counters(windows, found.make_key)], [])
    except CacheUnavailable as outage:
        return unavailable(stage, outage)
    return stage.limited(usages(counted.counts, windows))


def _count_by_key(stage: Stage) -> Limited | None:
    found = []
    for key in stage.keys:
        # Calls have no HttpRequest: the key is the caller's own (user or token) and every method counts.
        usage = get_usage(
            None, group=stage.group, key=lambda _group, _request, k=key: k, rate=stage.rate, increment=True
        )
        if usage:
            found.append(Usage(usage["count"], usage["limit"], usage["time_left"], usage["should_limit"]))
    return stage.limited(found)


def counters(windows: list[ratelimit_windows.Window], make_key: redis_counts.MakeKey) -> list[redis_counts.Counter]:
    return [redis_counts.Counter(make_key(w.key), w.limit, w.ttl) for w in windows]


def usages(counts: list[int], windows: list[ratelimit_windows.Window]) -> list[Usage]:
    """The usages of keys counted by the Redis script (a count of 0: not counted, as a stage before was over)."""
    return [Usage(n, w.limit, w.time_left, n > w.limit) for n, w in zip(counts, windows, strict=True)]


async def _counted(stage: Stage) -> Limited | None:
    """``_count``, on the event loop when the cache lives in this process's memory, where a thread hop would
    cost more than the count; in one round trip awaited on the loop on Redis; off the loop on another cache
    server (Memcached, a database)."""
    if not shared():
        return _count(stage)
    found = await concurrency.loop_scripts() if enabled() else None
    if found is not None:
        return await _count_in_redis(found, stage)
    return await sync_to_async(_count, thread_sensitive=False)(stage)


async def check(user: Any, token: Any, entry: Any, overrides: dict[tuple[int, int | None], str]) -> Limited | None:
    """Count this call against its rates; ``Limited`` when it is over one."""
    for stage in stages(user, token, entry, overrides):
        limited = await _counted(stage)
        if limited is not None:
            return limited
    return None


async def check_denied(user: Any, token: Any) -> Limited | None:
    """Count a call refused as denied or unknown against DENIED_RATE; ``Limited`` when it is over."""
    rate = mcp_settings.DENIED_RATE
    if not rate:
        return None
    return await _counted(Stage(rate, DENIED_GROUP, _keys(user, token)))


async def check_token(token: Any) -> Limited | None:
    """Count a call against its token's own rate, across every tool; ``Limited`` when it is over.

    Only site tokens carry a rate; OAuth access tokens and session logins have none.
    """
    stage = _token_stage(token)
    return None if stage is None else await _counted(stage)


def _token_stage(token: Any) -> Stage | None:
    """A site token's own rate, across every tool; OAuth access tokens and session logins have none."""
    rate = getattr(token, "rate_limit", "")
    return Stage(rate, TOKEN_GROUP, [credentials.identity(token)]) if rate else None

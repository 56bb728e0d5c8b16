"""Rate limits through django-ratelimit on the shared Django cache: per user and per token, per tool.

A site token's own ``rate_limit`` counts its calls across every tool, and binds whenever it is the lower
rate. Calls refused as denied or unknown count apart, against ``DENIED_RATE``, across every tool name. While
the cache cannot be reached, django-ratelimit's ``RATELIMIT_FAIL_OPEN`` decides: calls go uncounted (open),
or are refused with the time to retry after (closed, its default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django_ratelimit.core import get_usage

from mcp_tools.access import credentials, permissions
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


def _keys(user: Any, token: Any) -> list[str]:
    keys = [f"user:{user.pk}" if getattr(user, "is_authenticated", False) else "anonymous"]
    if token is not None:
        keys.append(credentials.identity(token))
    return keys


def _count(rate: str, group: str, keys: list[str]) -> Limited | None:
    try:
        return breaker.call(_count_in_cache, rate, group, keys)
    except CacheUnavailable as outage:
        if getattr(settings, "RATELIMIT_FAIL_OPEN", False):
            return None
        # One audit row per failed attempt to reach the cache, not one per call the open breaker refuses.
        return Unavailable(rate, outage.retry_after, first=outage.failed)


def _count_in_cache(rate: str, group: str, keys: list[str]) -> Limited | None:
    worst: Limited | None = None
    for key in keys:
        # Calls have no HttpRequest: the key is the caller's own (user or token) and every method counts.
        usage = get_usage(None, group=group, key=lambda _group, _request, k=key: k, rate=rate, increment=True)
        if usage and usage["should_limit"]:
            # The window's last second still counts for it: the next one opens a second later.
            retry = max(1, int(usage["time_left"]) + 1)
            first = usage["count"] <= usage["limit"] + 1
            if worst is not None:
                retry, first = max(retry, worst.retry_after), first or worst.first
            worst = Limited(rate, retry, first)
    return worst


async def _counted(rate: str, group: str, keys: list[str]) -> Limited | None:
    """``_count``, off the event loop when the cache is a server (Redis, Memcached, a database) and on it when
    the cache lives in this process's memory, where a thread hop would cost more than the count."""
    if not shared():
        return _count(rate, group, keys)
    return await sync_to_async(_count, thread_sensitive=False)(rate, group, keys)


async def check(user: Any, token: Any, entry: Any, overrides: dict[tuple[int, int | None], str]) -> Limited | None:
    """Count this call against its rate; ``Limited`` when it is over."""
    limited = await check_token(token)
    if limited is not None:
        return limited
    rate = rate_for(user, entry, overrides)
    if not rate:
        return None
    return await _counted(rate, f"{GROUP}:{entry.name}", _keys(user, token))


async def check_denied(user: Any, token: Any) -> Limited | None:
    """Count a call refused as denied or unknown against DENIED_RATE; ``Limited`` when it is over."""
    rate = mcp_settings.DENIED_RATE
    if not rate:
        return None
    return await _counted(rate, DENIED_GROUP, _keys(user, token))


async def check_token(token: Any) -> Limited | None:
    """Count a call against its token's own rate, across every tool; ``Limited`` when it is over.

    Only site tokens carry a rate; OAuth access tokens and session logins have none.
    """
    rate = getattr(token, "rate_limit", "")
    if not rate:
        return None
    return await _counted(rate, TOKEN_GROUP, [credentials.identity(token)])

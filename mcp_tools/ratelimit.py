"""Rate limits through django-ratelimit on the shared Django cache: per user and per token, per tool."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from asgiref.sync import sync_to_async
from django_ratelimit.core import _split_rate, get_usage

from mcp_tools import permissions
from mcp_tools.conf import mcp_settings

GROUP = "mcp_tools.call"


@dataclass(frozen=True)
class Limited:
    """The call was over its rate; the caller may retry after ``retry_after`` seconds."""

    rate: str
    retry_after: int


def calls_per_second(rate: str) -> float:
    limit, period = _split_rate(rate)
    return limit / period if period else 0.0


def rate_for(user: Any, entry: Any, overrides: dict[tuple[int, int | None], str]) -> str | None:
    """A group override for this tool, else one for every tool, else the tool's own rate, else the default.

    Among several groups the most generous override wins: an override exists to let a group do more.
    """
    groups = permissions.group_ids(user) if getattr(user, "is_authenticated", False) else frozenset()
    for tool_id in (entry.id, None):
        found = [overrides[(g, tool_id)] for g in groups if (g, tool_id) in overrides]
        if found:
            return max(found, key=calls_per_second)
    return entry.rate_limit or mcp_settings.DEFAULT_RATE or None


def _keys(user: Any, token: Any) -> list[str]:
    keys = [f"user:{user.pk}" if getattr(user, "is_authenticated", False) else "anonymous"]
    if token is not None:
        keys.append(f"token:{token.pk}")
    return keys


def _count(rate: str, tool_name: str, keys: list[str]) -> Limited | None:
    worst: Limited | None = None
    for key in keys:
        usage = get_usage(
            SimpleNamespace(), group=f"{GROUP}:{tool_name}", key=lambda _g, _r, k=key: k, rate=rate, increment=True
        )
        if usage and usage["should_limit"]:
            # The window's last second still counts for it: the next one opens a second later.
            retry = max(1, int(usage["time_left"]) + 1)
            worst = Limited(rate, max(retry, worst.retry_after if worst else 0))
    return worst


async def check(user: Any, token: Any, entry: Any, overrides: dict[tuple[int, int | None], str]) -> Limited | None:
    """Count this call against its rate; ``Limited`` when it is over."""
    rate = rate_for(user, entry, overrides)
    if not rate:
        return None
    # The cache may be Redis: keep its round trip off the event loop.
    return await sync_to_async(_count, thread_sensitive=False)(rate, entry.name, _keys(user, token))

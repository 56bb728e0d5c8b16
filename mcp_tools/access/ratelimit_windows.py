"""django-ratelimit's counting windows and cache keys, for counting its rates in one Redis round trip.

django-ratelimit's public ``get_usage`` counts one key per call, in two or three cache round trips; the
window and the cache key it counts under are private (``_get_window``, ``_make_cache_key``). This module
is the one place that reads them, so that a count made by the Redis script lands on the key, in the
window, that ``get_usage`` counts (tests/test_call_counts.py fails loudly when the two part).
"""

from __future__ import annotations

from dataclasses import dataclass

from django_ratelimit import ALL, core


@dataclass(frozen=True)
class Window:
    """Where one key's calls are counted against one rate now, as ``get_usage`` would count them."""

    key: str  # django-ratelimit's cache key (the cache still makes its own from it)
    limit: int
    ttl: int  # seconds the counter lives: the period, and django-ratelimit's margin
    time_left: int  # seconds until the window ends, as ``get_usage`` reports them


def window(group: str, rate: str, value: str) -> Window:
    """The window ``get_usage(None, group=group, key=<value>, rate=rate, increment=True)`` counts in now."""
    limit, period = core._split_rate(rate)
    end = core._get_window(value, period)
    return Window(
        key=core._make_cache_key(group, end, rate, value, ALL),
        limit=limit,
        ttl=period + core.EXPIRATION_FUDGE,
        time_left=end - int(core.time.time()),
    )

"""The shared cache's circuit breaker: after a failure, this process leaves the cache alone for a while.

Rate limits and call counters reach the cache django-ratelimit uses on every call. While it is down (Redis
stopped, unreachable) each call would wait for its own connection attempt to fail; the breaker answers at
once instead, for ``CACHE_RETRY_SECONDS`` after each failure, and the first call after that tries the cache
again. An outage is logged once when it starts and once when the cache answers again, never per call.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from django.core.signals import setting_changed
from django.dispatch import receiver

from mcp_tools.conf import mcp_settings

logger = logging.getLogger("mcp_tools")
T = TypeVar("T")


class CacheUnavailable(Exception):
    """The shared cache could not be used; ``failed`` says whether this attempt reached it and failed (rather
    than being skipped by the open breaker)."""

    def __init__(self, retry_after: int, failed: bool) -> None:
        super().__init__(f"The shared cache is unavailable; retry after {retry_after} s")
        self.retry_after = retry_after
        self.failed = failed


class Breaker:
    """Open for ``CACHE_RETRY_SECONDS`` after a failure; calls made while it is open are not tried."""

    def __init__(self) -> None:
        self.open_until = -math.inf
        self.down = False
        self._lock = threading.Lock()

    def call(self, work: Callable[..., T], *args: object) -> T:
        """``work(*args)``; CacheUnavailable when the breaker is open or the work fails."""
        with self._guarded():
            return work(*args)

    async def acall(self, work: Callable[..., Awaitable[T]], *args: object) -> T:
        """``await work(*args)``, as ``call`` runs ``work(*args)``."""
        with self._guarded():
            return await work(*args)

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        if time.monotonic() < self.open_until:
            raise CacheUnavailable(self.retry_after(), failed=False)
        try:
            yield
        except Exception as exc:
            self._failed(exc)
            raise CacheUnavailable(self.retry_after(), failed=True) from exc
        if self.down:
            self._recovered()

    def retry_after(self) -> int:
        """Whole seconds until the cache is tried again (at least one)."""
        return max(1, math.ceil(self.open_until - time.monotonic()))

    def reset(self) -> None:
        with self._lock:
            self.open_until, self.down = -math.inf, False

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            self.open_until = time.monotonic() + max(0.0, float(mcp_settings.CACHE_RETRY_SECONDS))
            started, self.down = not self.down, True
        if started:
            logger.warning(
                "The shared cache cannot be reached (%s: %s); rate limits and call counters fall back for now",
                type(exc).__name__,
                exc,
            )

    def _recovered(self) -> None:
        with self._lock:
            ended, self.down = self.down, False
        if ended:
            logger.warning("The shared cache answers again; rate limits and call counters use it again")


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: object) -> None:
    if setting in ("CACHES", "RATELIMIT_USE_CACHE"):
        breaker.reset()


#: The breaker of this process's shared cache (RATELIMIT_USE_CACHE).
breaker = Breaker()

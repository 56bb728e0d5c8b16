"""Credential-expiry timers: a listener whose token expires is ended when the expiry passes, not at its next
request or the next change event."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from mcp_tools.access.credentials import TOKEN_EXPIRED
from mcp_tools.notify.listeners import Listener, Listeners

# Far expiries are re-armed in steps, so a clock change cannot leave a timer days off.
MAX_TIMER_SECONDS = 3600.0


class ExpiryTimers:
    """One timer per registered listener whose token expires; ``end(listener, reason)`` once it has."""

    def __init__(self, listeners: Listeners, end: Callable[[Listener, str], None]) -> None:
        self._listeners = listeners
        self._end = end
        self._timers: dict[Any, asyncio.TimerHandle] = {}

    def __len__(self) -> int:
        return len(self._timers)

    def watch(self, listener: Listener) -> None:
        """Arm a timer for the moment the listener's token expires (re-armed when the expiry changes)."""
        self.cancel(listener)
        expires_at = getattr(getattr(listener, "token", None), "expires_at", None)
        if expires_at is None or listener not in self._listeners:
            return
        delay = (expires_at - timezone.now()).total_seconds()
        loop = asyncio.get_running_loop()
        self._timers[listener] = loop.call_later(min(max(delay, 0.0), MAX_TIMER_SECONDS), self._due, listener)

    def cancel(self, listener: Listener) -> None:
        timer = self._timers.pop(listener, None)
        if timer is not None:
            timer.cancel()

    def _due(self, listener: Listener) -> None:
        self._timers.pop(listener, None)
        if listener not in self._listeners:
            return
        if listener.token.is_expired:
            self._end(listener, TOKEN_EXPIRED)
        else:
            self.watch(listener)

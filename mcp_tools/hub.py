"""This process's listener for tool changes: one channel-layer subscription fanned out to local sessions."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from mcp_tools.catalog import catalog
from mcp_tools.notifications import EVENT_TYPE, channel_layer, group_name

logger = logging.getLogger("mcp_tools")

# channels_redis forgets group members after a day by default; renew well before that.
RENEW_SECONDS = 3600.0


class Listener(Protocol):
    """Anything told about tool changes: sessions and streams on every transport."""

    def tools_changed(self) -> None: ...


class Hub:
    """Joins the Channels group once per event loop while any local listener is connected.

    A change event invalidates this process's catalog and is handed to every local listener, so a
    thousand idle sessions cost one group member and one waiting task, not a thousand.
    """

    def __init__(self) -> None:
        self.listeners: set[Listener] = set()
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None

    @property
    def active(self) -> bool:
        return self._task is not None and not self._task.done()

    async def add(self, listener: Listener) -> None:
        """Register ``listener``; returns once this process is subscribed, so no later change is missed."""
        self.listeners.add(listener)
        if not self.active:
            layer = channel_layer()
            if layer is None:
                return
            self._ready = asyncio.Event()
            self._task = asyncio.ensure_future(self._run(layer, self._ready))
        if self._ready is not None:
            await self._ready.wait()

    def remove(self, listener: Listener) -> None:
        self.listeners.discard(listener)
        if not self.listeners and self._task is not None:
            self._task.cancel()
            self._task = None
            self._ready = None

    async def _run(self, layer: Any, ready: asyncio.Event) -> None:
        channel = await layer.new_channel(prefix="mcp_tools.hub")
        await layer.group_add(group_name(), channel)
        # Changes committed elsewhere while nobody here listened left the catalog stale.
        catalog.invalidate()
        ready.set()
        try:
            await self._receive_forever(layer, channel)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(layer.group_discard(group_name(), channel))

    async def _receive_forever(self, layer: Any, channel: str) -> None:
        loop = asyncio.get_running_loop()
        renew_at = loop.time() + RENEW_SECONDS
        while True:
            try:
                event = await asyncio.wait_for(layer.receive(channel), timeout=max(1.0, renew_at - loop.time()))
            except TimeoutError:
                await layer.group_add(group_name(), channel)
                renew_at = loop.time() + RENEW_SECONDS
                continue
            if event.get("type") == EVENT_TYPE:
                self.dispatch(str(event.get("stamp", "")))
            elif event.get("type") in _event_handlers:
                _event_handlers[event["type"]](event)

    def dispatch(self, stamp: str) -> None:
        catalog.invalidate(stamp)
        for listener in list(self.listeners):
            try:
                listener.tools_changed()
            except Exception:
                logger.exception("A session failed to take a list_changed notification")


EventHandler = Callable[[dict[str, Any]], None]
_event_handlers: dict[str, EventHandler] = {}


def on_event(event_type: str) -> Callable[[EventHandler], EventHandler]:
    """Register a process-wide handler for another event type carried by the group."""

    def register(handler: EventHandler) -> EventHandler:
        _event_handlers[event_type] = handler
        return handler

    return register


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """The hub of the running event loop."""
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        found = _hubs[loop] = Hub()
    return found

"""This process's listener for tool changes: one channel-layer subscription fanned out to local sessions."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from mcp_tools import permissions
from mcp_tools.catalog import catalog
from mcp_tools.notifications import ACCESS_EVENT, EVENT_TYPE, TOKEN_EVENT, channel_layer, group_name

logger = logging.getLogger("mcp_tools")

# channels_redis forgets group members after a day by default; renew well before that.
RENEW_SECONDS = 3600.0
_background: set[asyncio.Future[Any]] = set()


class Listener(Protocol):
    """Anything told about tool changes: sessions and streams on every transport."""

    def tools_changed(self, snapshot: Any) -> None: ...


class Hub:
    """Joins the Channels group once per event loop while any local listener is connected.

    A change event invalidates this process's catalog and is handed to every local listener, so a
    thousand idle sessions cost one group member and one waiting task, not a thousand.
    """

    def __init__(self) -> None:
        self.listeners: set[Listener] = set()
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._renewal: asyncio.TimerHandle | None = None

    @property
    def active(self) -> bool:
        return self._task is not None and not self._task.done()

    async def add(self, listener: Listener) -> None:
        """Register ``listener``; returns once this process is subscribed, so no later change is missed."""
        self.listeners.add(listener)
        if not self.active:
            layer = channel_layer()
            if layer is not None:
                self._ready = asyncio.Event()
                self._task = asyncio.ensure_future(self._run(layer, self._ready))
        if self._ready is not None:
            await self._ready.wait()
        await baseline(listener)

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
        self._renewal = asyncio.get_running_loop().call_later(RENEW_SECONDS, self._renew, layer, channel)
        failures = 0
        try:
            while True:
                try:
                    event = await layer.receive(channel)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    failures = await self._recover(layer, channel, exc, failures)
                    continue
                failures = 0
                try:
                    await self.deliver(event)
                except Exception:
                    # One event that cannot be acted on (a database hiccup) must not end every later one.
                    logger.exception("Could not act on a tool change event")
        finally:
            if self._renewal is not None:
                self._renewal.cancel()

    def _renew(self, layer: Any, channel: str) -> None:
        task = asyncio.ensure_future(layer.group_add(group_name(), channel))
        _background.add(task)
        task.add_done_callback(_background.discard)
        self._renewal = asyncio.get_running_loop().call_later(RENEW_SECONDS, self._renew, layer, channel)

    async def _recover(self, layer: Any, channel: str, exc: Exception, failures: int) -> int:
        """Survive a failed receive: a read timeout is harmless; anything else may have lost an event."""
        if type(exc).__name__ == "TimeoutError":
            # redis-py's socket timeout can fire while channels-redis waits on an empty queue.
            return failures
        failures += 1
        logger.warning("Lost the channel layer (%s); joining again", exc, exc_info=failures == 1)
        await asyncio.sleep(min(5.0, 0.05 * 2**failures))
        with contextlib.suppress(Exception):
            await layer.group_add(group_name(), channel)
            # Whatever changed meanwhile is found by comparing each caller's list afresh.
            await self.deliver({"type": EVENT_TYPE, "stamp": ""})
        return failures

    async def deliver(self, event: dict[str, Any]) -> None:
        """Act on one group event; after a tool or access change, tell each listener whose list changed."""
        kind = event.get("type")
        if kind == EVENT_TYPE:
            catalog.invalidate(str(event.get("stamp", "")))
        elif kind == TOKEN_EVENT:
            for listener in list(self.listeners):
                if getattr(getattr(listener, "token", None), "pk", None) == event.get("token"):
                    listener.revoked = True  # type: ignore[attr-defined]
            return
        elif kind == ACCESS_EVENT:
            users = event.get("users")
            await permissions.reload([u for u in self.users() if users is None or getattr(u, "pk", None) in users])
        else:
            handler = _event_handlers.get(str(kind))
            if handler is not None:
                handler(event)
            return
        snapshot = await catalog.get()
        for listener in list(self.listeners):
            try:
                listener.tools_changed(snapshot)
            except Exception:
                logger.exception("A session failed to take a list_changed notification")

    def users(self) -> list[Any]:
        return [u for u in (getattr(listener, "user", None) for listener in self.listeners) if u is not None]


async def baseline(listener: Any) -> None:
    """Record what a new listener's list looks like now, so that later only real changes are announced."""
    user = getattr(listener, "user", None)
    remember = getattr(listener, "remember", None)
    if user is None or remember is None:
        return
    await permissions.prepare(user)
    remember(await catalog.get())


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

"""This process's membership of the Channels group that carries change events: joining it, renewing it,
joining again with a growing pause after the layer fails, and handing each event on; and the handlers that
other parts register for event types of their own.

The channel layer is pluggable (in-memory, Redis, others), and its failures share no base class: they are
caught as ``Exception``, logged, and answered by polling the change counters until the group is joined again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from channels.layers import InMemoryChannelLayer

from mcp_tools.notify.events import channel_layer, group_name

logger = logging.getLogger("mcp_tools")

# channels_redis forgets group members after a day by default; renew well before that.
RENEW_SECONDS = 3600.0
# The first and the longest pause between attempts to join the group again while the layer is down.
REJOIN_FIRST_SECONDS = 0.05
REJOIN_MAX_SECONDS = 2.0
CHANNEL_PREFIX = "mcp_tools.notify.hub"
_background: set[asyncio.Future[Any]] = set()

Event = dict[str, Any]


def cross_process(layer: Any) -> bool:
    """Whether group messages on ``layer`` reach other processes."""
    return layer is not None and not isinstance(layer, InMemoryChannelLayer)


def rejoin_pause(failures: int) -> float:
    """The pause before the next attempt to join, after ``failures`` failures in a row."""
    return min(REJOIN_MAX_SECONDS, REJOIN_FIRST_SECONDS * 2**failures)


class GroupSubscription:
    """Hears the change group on the configured channel layer while joined.

    ``deliver(event)`` acts on each event; ``joined()`` runs once the first join succeeded or failed (events
    sent before it were missed); ``hearing_changed()`` whenever :attr:`hears_others` turns; ``missed()``
    once the group is joined again after a failure, since the events sent meanwhile are lost.
    """

    def __init__(
        self,
        deliver: Callable[[Event], Awaitable[None]],
        joined: Callable[[], None],
        hearing_changed: Callable[[], None],
        missed: Callable[[], Awaitable[None]],
    ) -> None:
        self._deliver = deliver
        self._joined = joined
        self._hearing_changed = hearing_changed
        self._missed = missed
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._renewal: asyncio.TimerHandle | None = None
        self._hears_others = False

    @property
    def active(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def hears_others(self) -> bool:
        """Whether change events from other processes reach this process right now."""
        return self._hears_others and self.active

    async def join(self) -> None:
        """Join the group unless joined; returns once the first attempt succeeded, or failed and the counters
        stand in for the layer (sessions open all the same)."""
        if not self.active:
            layer = channel_layer()
            if layer is not None:
                self._ready = asyncio.Event()
                self._hears_others = cross_process(layer)
                self._task = asyncio.ensure_future(self._run(layer, self._ready))
        if self._ready is not None:
            await self._ready.wait()

    def leave(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._task = None
        self._ready = None

    async def _run(self, layer: Any, ready: asyncio.Event) -> None:
        channel = ""
        try:
            channel = await layer.new_channel(prefix=CHANNEL_PREFIX)
            await layer.group_add(group_name(), channel)
        except Exception as exc:  # the layer's own failure, of no common type (see the module docstring)
            if _cancelling():
                raise asyncio.CancelledError from exc
            self._lose(exc)
            ready.set()
            channel = channel or await layer.new_channel(prefix=CHANNEL_PREFIX)
            await self._rejoin(layer, channel, 1)
        self._joined()
        ready.set()
        try:
            await self._receive_forever(layer, channel)
        finally:
            await self._discard(layer, channel)

    async def _receive_forever(self, layer: Any, channel: str) -> None:
        self._renewal = asyncio.get_running_loop().call_later(RENEW_SECONDS, self._renew, layer, channel)
        failures = 0
        try:
            while True:
                try:
                    event = await layer.receive(channel)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the layer's own failure, of no common type (see the module docstring)
                    if _cancelling():
                        # redis-py reports a cancellation that meets its read timeout as a TimeoutError.
                        raise asyncio.CancelledError from exc
                    if type(exc).__name__ != "TimeoutError":
                        # redis-py's socket timeout can fire while channels-redis waits on an empty queue;
                        # anything else may have lost events, and the group with them if Redis restarted.
                        failures += 1
                        self._lose(exc)
                        await self._rejoin(layer, channel, failures)
                    continue
                failures = 0
                await self._hand_on(event)
        finally:
            if self._renewal is not None:
                self._renewal.cancel()

    async def _hand_on(self, event: Event) -> None:
        try:
            await self._deliver(event)
        except Exception:
            # One event that cannot be acted on (a database hiccup) must not end every later one.
            logger.exception("Could not act on a tool change event")

    def _renew(self, layer: Any, channel: str) -> None:
        task = asyncio.ensure_future(self._join(layer, channel))
        _background.add(task)
        task.add_done_callback(_background.discard)
        self._renewal = asyncio.get_running_loop().call_later(RENEW_SECONDS, self._renew, layer, channel)

    async def _join(self, layer: Any, channel: str) -> bool:
        try:
            await layer.group_add(group_name(), channel)
        except Exception as exc:  # the layer's own failure, of no common type (see the module docstring)
            if _cancelling():
                raise asyncio.CancelledError from exc
            logger.debug("Could not join the change group (%s: %s)", type(exc).__name__, exc)
            return False
        return True

    async def _discard(self, layer: Any, channel: str) -> None:
        try:
            await asyncio.shield(layer.group_discard(group_name(), channel))
        except Exception as exc:  # the layer's own failure, of no common type (see the module docstring)
            # Leaving is a courtesy: a layer that cannot be reached forgets the member once it expires.
            logger.debug("Could not leave the change group (%s: %s)", type(exc).__name__, exc)

    def _lose(self, exc: Exception) -> None:
        """The layer failed: the counters are polled at the shorter interval until it is joined again."""
        if self._hears_others:
            logger.warning(
                "Lost the channel layer (%s: %s); polling the change counters until it is back",
                type(exc).__name__,
                exc,
            )
        self._hears_others = False
        self._hearing_changed()

    async def _rejoin(self, layer: Any, channel: str, failures: int) -> None:
        """Join the group again after a pause that grows with ``failures`` (in a row, counting this one's
        attempts), so a layer that keeps failing is not hammered; then act on whatever changed meanwhile."""
        while True:
            await asyncio.sleep(rejoin_pause(failures))
            if await self._join(layer, channel):
                break
            failures += 1
        logger.warning("The channel layer is back; change events reach this process again")
        self._hears_others = cross_process(layer)
        self._hearing_changed()
        try:
            await self._missed()
        except Exception:
            # Rejoined all the same: this catch-up comes on top of the counters polled during the outage, and a
            # failure of it (a database hiccup) must not cost the subscription every later event.
            logger.exception("Could not act on changes made while the channel layer was down")


def _cancelling() -> bool:
    """Whether the running task has been asked to stop, even if a library turned that into another error."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


EventHandler = Callable[[Event], None]
_event_handlers: dict[str, list[EventHandler]] = {}


def on_event(event_type: str) -> Callable[[EventHandler], EventHandler]:
    """Register a process-wide handler for another event type carried by the group."""

    def register(handler: EventHandler) -> EventHandler:
        handlers = _event_handlers.setdefault(event_type, [])
        if handler not in handlers:
            handlers.append(handler)
        return handler

    return register


def handlers_of(event_type: str) -> list[EventHandler]:
    """The handlers registered for ``event_type``, in the order they were registered."""
    return _event_handlers.get(event_type, [])

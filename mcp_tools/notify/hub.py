"""This process's watch over changes made anywhere, fanned out to its local sessions and streams.

One hub per event loop hears the Channels group (at once, across processes on Redis), reads the change
counters (every ``poll_seconds()`` where no cross-process layer carries events; every
``safety_poll_seconds()`` beside one, for lost messages) and times token expiry. What it learns it acts on
for every local listener: a changed tool list is announced to the callers whose own list changed, and a
caller whose token was revoked or expired, or whose user was deactivated or deleted, is ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer
from django.utils import timezone

from mcp_tools.access import credentials, permissions
from mcp_tools.access.authentication import forget_tokens
from mcp_tools.access.reach import reach_of
from mcp_tools.conf import mcp_settings
from mcp_tools.loops import PerLoop
from mcp_tools.notify import counters as polling
from mcp_tools.notify.events import ACCESS_EVENT, EVENT_TYPE, TOKEN_EVENT, channel_layer, group_name
from mcp_tools.server.session import TOKEN_EXPIRED, TOKEN_REVOKED, USER_INACTIVE, credentials_problem
from mcp_tools.tools.catalog import catalog

logger = logging.getLogger("mcp_tools")

# channels_redis forgets group members after a day by default; renew well before that.
RENEW_SECONDS = 3600.0
# The longest pause between attempts to join the group again while the layer is down.
REJOIN_MAX_SECONDS = 2.0
# Far expiries are re-armed in steps, so a clock change cannot leave a timer days off.
MAX_TIMER_SECONDS = 3600.0
_background: set[asyncio.Future[Any]] = set()


class Listener(Protocol):
    """A caller's session or stream on any transport: told when its own list changes, ended when its
    credentials stop working."""

    user: Any
    token: Any

    def tools_changed(self, snapshot: Any) -> None: ...

    def end(self, reason: str) -> None: ...


def cross_process(layer: Any) -> bool:
    """Whether group messages on ``layer`` reach other processes."""
    return layer is not None and not isinstance(layer, InMemoryChannelLayer)


class Hub:
    """Joins the Channels group and polls the change counters while any local listener is connected.

    A thousand idle sessions cost one group member, one poll and one waiting task, not a thousand.
    """

    def __init__(self) -> None:
        self.listeners: set[Listener] = set()
        self._retainers: set[object] = set()
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._renewal: asyncio.TimerHandle | None = None
        self._hears_others = False
        self._poll: asyncio.Task[None] | None = None
        self._seen: polling.Counters | None = None
        self._checked = -math.inf  # monotonic time of the last counter read
        self._checking: asyncio.Future[None] | None = None
        self._expiry: dict[Any, asyncio.TimerHandle] = {}

    @property
    def active(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def hears_others(self) -> bool:
        """Whether change events from other processes reach this hub right now."""
        return self._hears_others and self.active

    async def add(self, listener: Listener) -> None:
        """Register ``listener``; returns once this process is subscribed, so no later change is missed."""
        self.listeners.add(listener)
        await self._start()
        await baseline(listener)
        self._watch_expiry(listener)

    async def retain(self, holder: object) -> None:
        """Keep hearing the group for ``holder``, which tells no caller but keeps state that events refresh
        (the HTTP session cache hears of sessions ended elsewhere); until :meth:`release`."""
        self._retainers.add(holder)
        await self._start()

    def release(self, holder: object) -> None:
        self._retainers.discard(holder)
        self._stop_when_idle()

    async def _start(self) -> None:
        if not self.active:
            layer = channel_layer()
            if layer is not None:
                self._ready = asyncio.Event()
                self._hears_others = cross_process(layer)
                self._task = asyncio.ensure_future(self._run(layer, self._ready))
        if self._ready is not None:
            await self._ready.wait()
        if self._poll is None or self._poll.done():
            self._poll = asyncio.ensure_future(self._poll_forever())
        await self.ensure_fresh()

    def remove(self, listener: Listener) -> None:
        self.listeners.discard(listener)
        timer = self._expiry.pop(listener, None)
        if timer is not None:
            timer.cancel()
        self._stop_when_idle()

    def _stop_when_idle(self) -> None:
        if not self.listeners and not self._retainers:
            for task in (self._task, self._poll):
                if task is not None:
                    task.cancel()
            self._task = self._poll = None
            self._ready = None

    # Counters -----------------------------------------------------------------------------------

    def poll_interval(self) -> float:
        return polling.safety_poll_seconds() if self.hears_others else polling.poll_seconds()

    async def ensure_fresh(self) -> None:
        """Read the change counters unless that was done within the poll interval; act on what changed.

        Requests that hold no listener (stateless HTTP) call this first, so the catalog, the remembered
        tokens and users they are answered from are never older than the poll interval.
        """
        if time.monotonic() - self._checked < self.poll_interval():
            return
        if self._checking is None or self._checking.done():
            self._checking = asyncio.ensure_future(self._check())
        await asyncio.shield(self._checking)

    async def _check(self) -> None:
        started = time.monotonic()
        try:
            counters = await database_sync_to_async(polling.read)()
        except Exception:
            self._checked = started  # a database outage is retried at the next interval, not per request
            logger.warning("Could not read the change counters", exc_info=True)
            return
        seen, self._seen, self._checked = self._seen, counters, started
        if seen is None:
            # The first read in this process: anything cached before it may predate changes made elsewhere.
            catalog.invalidate()
            forget_tokens()
            return
        changed = {kind for kind, value in counters.items() if seen.get(kind) != value}
        if changed:
            await self.refresh(changed)

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval())
            try:
                await self.ensure_fresh()
            except Exception:
                logger.exception("Could not act on changes found in the change counters")

    async def refresh(self, kinds: Iterable[str]) -> None:
        """Act on changes of these kinds whose details are unknown (the counters, a lost connection)."""
        kinds = set(kinds)
        if polling.TOOLS in kinds:
            catalog.invalidate()
        if polling.ACCESS in kinds:
            await self.recheck_users(None)
        if polling.TOKENS in kinds:
            await self.recheck_tokens(None)
        await self.announce()

    # Channels group -----------------------------------------------------------------------------

    async def _run(self, layer: Any, ready: asyncio.Event) -> None:
        channel = ""
        try:
            channel = await layer.new_channel(prefix="mcp_tools.notify.hub")
            await layer.group_add(group_name(), channel)
        except Exception as exc:
            if _cancelling():
                raise asyncio.CancelledError from exc
            # Sessions open all the same; the counters stand in for the layer until it is joined.
            self._lose(exc)
            ready.set()
            channel = channel or await layer.new_channel(prefix="mcp_tools.notify.hub")
            await self._rejoin(layer, channel, 1)
        # Events sent while nobody here listened were missed: the counters tell whether any were.
        self._checked = -math.inf
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
                try:
                    await self.deliver(event)
                except Exception:
                    # One event that cannot be acted on (a database hiccup) must not end every later one.
                    logger.exception("Could not act on a tool change event")
        finally:
            if self._renewal is not None:
                self._renewal.cancel()

    def _renew(self, layer: Any, channel: str) -> None:
        task = asyncio.ensure_future(self._join(layer, channel))
        _background.add(task)
        task.add_done_callback(_background.discard)
        self._renewal = asyncio.get_running_loop().call_later(RENEW_SECONDS, self._renew, layer, channel)

    async def _join(self, layer: Any, channel: str) -> bool:
        try:
            await layer.group_add(group_name(), channel)
        except Exception as exc:
            if _cancelling():
                raise asyncio.CancelledError from exc
            return False
        return True

    def _lose(self, exc: Exception) -> None:
        """The layer failed: poll the counters at ``poll_seconds()`` until it is joined again."""
        if self._hears_others:
            logger.warning(
                "Lost the channel layer (%s: %s); polling the change counters until it is back",
                type(exc).__name__,
                exc,
            )
        self._hears_others = False
        self._repoll()

    async def _rejoin(self, layer: Any, channel: str, failures: int) -> None:
        """Join the group again after a pause that grows with ``failures`` (in a row, counting this one's
        attempts), so a layer that keeps failing is not hammered; then act on whatever changed meanwhile."""
        while True:
            await asyncio.sleep(min(REJOIN_MAX_SECONDS, 0.05 * 2**failures))
            if await self._join(layer, channel):
                break
            failures += 1
        logger.warning("The channel layer is back; change events reach this process again")
        self._hears_others = cross_process(layer)
        self._repoll()
        # Events sent while the layer was down are lost: re-check every caller afresh.
        try:
            await self.refresh(polling.KINDS)
        except Exception:
            logger.exception("Could not act on changes made while the channel layer was down")

    def _repoll(self) -> None:
        """Restart the counter poll, so that a changed poll interval takes effect now, not after the old one."""
        if self._poll is not None and not self._poll.done():
            self._poll.cancel()
            self._poll = asyncio.ensure_future(self._poll_forever())

    async def deliver(self, event: dict[str, Any]) -> None:
        """Act on one group event."""
        kind = event.get("type")
        if kind == EVENT_TYPE:
            catalog.invalidate(str(event.get("stamp", "")))
        elif kind == TOKEN_EVENT:
            await self.recheck_tokens({(str(event.get("kind", credentials.SITE_TOKEN)), event.get("token"))})
            return
        elif kind == ACCESS_EVENT:
            users = event.get("users")
            await self.recheck_users(None if users is None else set(users))
        else:
            for handler in _event_handlers.get(str(kind), ()):
                handler(event)
            return
        await self.announce()

    # Acting on changes --------------------------------------------------------------------------

    async def announce(self) -> None:
        """Tell each listener whose tool list changed."""
        snapshot = await catalog.get()
        for listener in list(self.listeners):
            try:
                listener.tools_changed(snapshot)
            except Exception:
                logger.exception("A session failed to take a list_changed notification")

    async def recheck_users(self, user_ids: set[Any] | None) -> None:
        """Re-read these users (None: every local caller); end the callers who may no longer connect."""
        forget_tokens()
        callers = [
            listener
            for listener in list(self.listeners)
            if getattr(listener.user, "is_authenticated", False) and (user_ids is None or listener.user.pk in user_ids)
        ]
        fresh = await permissions.reload(listener.user for listener in callers)
        for listener in callers:
            user = fresh.get(listener.user.pk)
            if user is None:
                self.end(listener, USER_INACTIVE)
                continue
            listener.user = user
            problem = credentials_problem(user, None)
            if problem is not None:
                self.end(listener, problem)

    async def recheck_tokens(self, keys: set[credentials.Key] | None) -> None:
        """Re-read these credentials ((kind, id); None: every local caller's); end callers whose credential
        no longer works."""
        forget_tokens()
        holders = [
            listener
            for listener in list(self.listeners)
            if listener.token is not None and (keys is None or credentials.key(listener.token) in keys)
        ]
        if not holders:
            return
        wanted: dict[str, set[Any]] = {}
        for listener in holders:
            kind, pk = credentials.key(listener.token)
            wanted.setdefault(kind, set()).add(pk)
        found = {kind: await database_sync_to_async(credentials.rows)(kind, ids) for kind, ids in wanted.items()}
        kept, narrowed = [], False
        for listener in holders:
            kind, pk = credentials.key(listener.token)
            row = found[kind].get(pk)
            if row is None or row.user_id != getattr(listener.user, "pk", None):
                self.end(listener, TOKEN_REVOKED)
                continue
            listener.token.expires_at = row.expires_at
            if listener.token.is_expired:
                self.end(listener, TOKEN_EXPIRED)
                continue
            self._watch_expiry(listener)
            kept.append(listener)
            if row.reach != reach_of(listener.token):
                # Sessions opened with one token may share its credential: set once, seen by them all.
                listener.token.reach = row.reach
                narrowed = True
        if narrowed:
            # A user changed which tools a credential reaches: its holders' lists may have changed.
            snapshot = await catalog.get()
            for listener in kept:
                listener.tools_changed(snapshot)

    def admits(self, user: Any) -> bool:
        """Whether ``user`` may open one more connection here (anonymous callers share one allowance)."""
        key = _connection_key(user)
        held = sum(1 for listener in list(self.listeners) if _connection_key(listener.user) == key)
        return held < int(mcp_settings.MAX_CONNECTIONS_PER_USER)

    def end(self, listener: Listener, reason: str) -> None:
        """Cut ``listener`` off: it hears nothing more and its transport closes it."""
        self.remove(listener)
        logger.info("Ending an MCP connection of %s: %s", getattr(listener, "user", None), reason)
        listener.end(reason)

    def _watch_expiry(self, listener: Listener) -> None:
        """Arm a timer for the moment the listener's token expires (re-armed when the expiry changes)."""
        timer = self._expiry.pop(listener, None)
        if timer is not None:
            timer.cancel()
        expires_at = getattr(getattr(listener, "token", None), "expires_at", None)
        if expires_at is None or listener not in self.listeners:
            return
        delay = (expires_at - timezone.now()).total_seconds()
        loop = asyncio.get_running_loop()
        self._expiry[listener] = loop.call_later(min(max(delay, 0.0), MAX_TIMER_SECONDS), self._expiry_due, listener)

    def _expiry_due(self, listener: Listener) -> None:
        self._expiry.pop(listener, None)
        if listener not in self.listeners:
            return
        if listener.token.is_expired:
            self.end(listener, TOKEN_EXPIRED)
        else:
            self._watch_expiry(listener)


def _cancelling() -> bool:
    """Whether the running task has been asked to stop, even if a library turned that into another error."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def too_many_connections() -> str:
    return f"Too many open connections (at most {mcp_settings.MAX_CONNECTIONS_PER_USER} per user)"


def _connection_key(user: Any) -> Any:
    return user.pk if getattr(user, "is_authenticated", False) else None


async def baseline(listener: Any) -> None:
    """Record what a new listener's list looks like now, so that later only real changes are announced."""
    user = getattr(listener, "user", None)
    remember = getattr(listener, "remember", None)
    if user is None or remember is None:
        return
    await permissions.prepare(user)
    remember(await catalog.get())


EventHandler = Callable[[dict[str, Any]], None]
_event_handlers: dict[str, list[EventHandler]] = {}


def on_event(event_type: str) -> Callable[[EventHandler], EventHandler]:
    """Register a process-wide handler for another event type carried by the group."""

    def register(handler: EventHandler) -> EventHandler:
        handlers = _event_handlers.setdefault(event_type, [])
        if handler not in handlers:
            handlers.append(handler)
        return handler

    return register


#: The hub of the running event loop.
hub = PerLoop(Hub)

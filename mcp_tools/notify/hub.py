"""This process's watch over changes made anywhere, fanned out to its local sessions and streams.

One hub per event loop composes the parts that do the work: the listeners it serves
(:mod:`~mcp_tools.notify.listeners`), the Channels group that brings events at once, across processes on
Redis (:mod:`~mcp_tools.notify.group`), the change counters read every ``poll_seconds()`` where no
cross-process layer carries events and every ``safety_poll_seconds()`` beside one, for lost messages
(:mod:`~mcp_tools.notify.poller`), what a change makes it re-check (:mod:`~mcp_tools.notify.rechecks`) and
the credential-expiry timers (:mod:`~mcp_tools.notify.expiry`). A changed tool list is announced to the
callers whose own list changed; a caller whose token was revoked or expired, or whose user was deactivated
or deleted, is ended.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp_tools.loops import PerLoop
from mcp_tools.notify import counters
from mcp_tools.notify.expiry import ExpiryTimers
from mcp_tools.notify.group import GroupSubscription, handlers_of
from mcp_tools.notify.listeners import Listener, Listeners, baseline
from mcp_tools.notify.poller import Poller
from mcp_tools.notify.rechecks import Rechecks

logger = logging.getLogger("mcp_tools")


class Hub:
    """Joins the Channels group and polls the change counters while any local listener is connected.

    A thousand idle sessions cost one group member, one poll and one waiting task, not a thousand.
    """

    def __init__(self) -> None:
        self.registry = Listeners()
        self.listeners = self.registry.members
        self.expiry = ExpiryTimers(self.registry, self.end)
        self.rechecks = Rechecks(self.registry, self.end, self.expiry)
        self.poller = Poller(self.poll_interval, self.rechecks.refresh, self.rechecks.forget_cached)
        self.group = GroupSubscription(
            deliver=self.deliver,
            joined=self.poller.expire,
            hearing_changed=self.poller.restart,
            missed=self._missed,
        )

    @property
    def active(self) -> bool:
        return self.group.active

    @property
    def hears_others(self) -> bool:
        """Whether change events from other processes reach this hub right now."""
        return self.group.hears_others

    async def add(self, listener: Listener) -> None:
        """Register ``listener``; returns once this process is subscribed, so no later change is missed."""
        self.listeners.add(listener)
        await self._start()
        await baseline(listener)
        self.expiry.watch(listener)

    async def retain(self, holder: object) -> None:
        """Keep hearing the group for ``holder``, which tells no caller but keeps state that events refresh
        (the HTTP session cache hears of sessions ended elsewhere); until :meth:`release`."""
        self.registry.holders.add(holder)
        await self._start()

    def release(self, holder: object) -> None:
        self.registry.holders.discard(holder)
        self._stop_when_idle()

    def remove(self, listener: Listener) -> None:
        self.listeners.discard(listener)
        self.expiry.cancel(listener)
        self._stop_when_idle()

    def end(self, listener: Listener, reason: str) -> None:
        """Cut ``listener`` off: it hears nothing more and its transport closes it."""
        self.remove(listener)
        logger.info("Ending an MCP connection of %s: %s", getattr(listener, "user", None), reason)
        listener.end(reason)

    def admits(self, user: Any) -> bool:
        """Whether ``user`` may open one more connection here (anonymous callers share one allowance)."""
        return self.registry.admits(user)

    def poll_interval(self) -> float:
        return counters.safety_poll_seconds() if self.hears_others else counters.poll_seconds()

    async def ensure_fresh(self) -> None:
        """Read the change counters unless that was done within the poll interval; act on what changed."""
        await self.poller.ensure_fresh()

    async def deliver(self, event: dict[str, Any]) -> None:
        """Act on one group event: a change of tools, access or a credential, or another registered type."""
        if not await self.rechecks.act_on(event):
            for handler in handlers_of(str(event.get("type"))):
                handler(event)

    async def _start(self) -> None:
        await self.group.join()
        self.poller.start()
        await self.poller.ensure_fresh()

    def _stop_when_idle(self) -> None:
        if self.registry.idle:
            self.group.leave()
            self.poller.stop()

    async def _missed(self) -> None:
        # Events sent while the layer was down are lost: re-check every caller afresh.
        await self.rechecks.refresh(counters.KINDS)


#: The hub of the running event loop.
hub = PerLoop(Hub)

"""The change-counter poller: reads the counters at an interval, and on demand when they are due, and reports
which kinds of change happened since the last read."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

from channels.db import database_sync_to_async
from django.db import Error as DatabaseError

from mcp_tools.notify import counters

logger = logging.getLogger("mcp_tools")


class Poller:
    """Reads the change counters every ``interval()`` seconds while started, and whenever
    :meth:`ensure_fresh` finds the last read older than that.

    ``changed(kinds)`` acts on the kinds whose counter moved; ``first()`` on the first read in this process,
    before which anything cached may predate changes made elsewhere.
    """

    def __init__(
        self,
        interval: Callable[[], float],
        changed: Callable[[set[str]], Awaitable[None]],
        first: Callable[[], None],
    ) -> None:
        self.interval = interval
        self._changed = changed
        self._first = first
        self._task: asyncio.Task[None] | None = None
        self._seen: counters.Counters | None = None
        self._checked = -math.inf  # monotonic time of the last counter read
        self._checking: asyncio.Future[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if not self.running:
            self._task = asyncio.ensure_future(self._poll_forever())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._task = None

    def restart(self) -> None:
        """Restart a running poll, so that a changed interval takes effect now, not after the old one."""
        if self.running:
            self.stop()
            self.start()

    def expire(self) -> None:
        """Let the next :meth:`ensure_fresh` read the counters, however recent the last read."""
        self._checked = -math.inf

    async def ensure_fresh(self) -> None:
        """Read the change counters unless that was done within the poll interval; act on what changed.

        Requests that hold no listener (stateless HTTP) call this first, so the catalog, the remembered
        tokens and users they are answered from are never older than the poll interval.
        """
        if time.monotonic() - self._checked < self.interval():
            return
        if self._checking is None or self._checking.done():
            self._checking = asyncio.ensure_future(self._check())
        await asyncio.shield(self._checking)

    async def _check(self) -> None:
        started = time.monotonic()
        try:
            found = await database_sync_to_async(counters.read)()
        except DatabaseError:
            self._checked = started  # a database outage is retried at the next interval, not per request
            logger.warning("Could not read the change counters", exc_info=True)
            return
        seen, self._seen, self._checked = self._seen, found, started
        if seen is None:
            self._first()
            return
        changed = {kind for kind, value in found.items() if seen.get(kind) != value}
        if changed:
            await self._changed(changed)

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.interval())
            try:
                await self.ensure_fresh()
            except Exception:
                # The poll is the safety net for every later change: a round that fails to act on what it
                # found (a listener's error, the database lost mid-recheck) must not end it.
                logger.exception("Could not act on changes found in the change counters")

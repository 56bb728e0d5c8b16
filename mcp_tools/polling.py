"""Notices tool changes made by other processes when no shared channel layer carries them.

Every committed change to tools bumps one counter row; a process without a cross-process channel
layer (``mcp_stdio`` beside a web process on the in-memory layer) reads it every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from channels.db import database_sync_to_async
from django.db import DatabaseError
from django.db.models import F

from mcp_tools import permissions
from mcp_tools.catalog import catalog

logger = logging.getLogger("mcp_tools")


async def hub_baseline(listener: Any) -> None:
    from mcp_tools.hub import baseline

    await baseline(listener)


COUNTER = "tools"


def bump(using: str | None = None) -> None:
    """Count one change to tools inside the current transaction (so a rollback undoes it)."""
    from mcp_tools.models import ChangeCounter

    manager = ChangeCounter.objects.db_manager(using)
    if not manager.filter(pk=COUNTER).update(value=F("value") + 1):
        manager.get_or_create(pk=COUNTER, defaults={"value": 1})


def read() -> int:
    from mcp_tools.models import ChangeCounter

    return ChangeCounter.objects.filter(pk=COUNTER).values_list("value", flat=True).first() or 0


class Poller:
    """Tells ``listener`` about changes seen in the counter, every ``interval`` seconds."""

    def __init__(self, listener: Any, interval: float) -> None:
        self.listener, self.interval = listener, interval
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        seen = await database_sync_to_async(read)()
        await hub_baseline(self.listener)
        self._task = asyncio.ensure_future(self._run(seen))

    async def _run(self, seen: int) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                current = await database_sync_to_async(read)()
            except DatabaseError:
                logger.warning("Could not read the tool change counter", exc_info=True)
                continue
            if current != seen:
                seen = current
                catalog.invalidate()
                user = getattr(self.listener, "user", None)
                if user is not None:
                    await permissions.reload([user])
                self.listener.tools_changed(await catalog.get())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

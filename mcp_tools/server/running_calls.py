"""The calls in progress of this process: shown in the admin as ``RunningCall`` rows, and cancelled from there.

A call costs a dictionary insert and delete here, nothing more. One sweeper task per event loop, running
only while calls are in progress (or rows of ended calls remain), wakes every ``TICK_SECONDS``: it writes a
row for each call older than ``RUNNING_CALLS_VISIBLE_SECONDS``, deletes the rows of calls that ended, renews
``seen_at`` of its rows every ``RENEW_SECONDS``, prunes the rows that no process renews any more (whenever
it writes rows, and every half ``RUNNING_CALLS_STALE_SECONDS`` while it has some), and cancels the calls
whose rows an administrator marked. A fast call therefore never touches the database.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.db.models import QuerySet
from django.utils import timezone

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import CancelledByAdmin
from mcp_tools.loops import PerLoop
from mcp_tools.models import RunningCall

logger = logging.getLogger("mcp_tools")

TICK_SECONDS = 1.0
RENEW_SECONDS = 5.0
ADMIN_CANCELLED = CancelledByAdmin.default_message


class Stoppable(Protocol):
    """What the registry knows of a call: who runs what, since when, and how to stop it."""

    started: float  # time.perf_counter() when the call began

    def describe(self) -> dict[str, Any]: ...

    def stop_by_admin(self) -> None: ...


def process_name() -> str:
    """This process among all that share the database: host, pid and a random suffix (pids are reused)."""
    host = socket.gethostname()[:40]
    return f"{host}:{os.getpid()}:{secrets.token_hex(3)}"


def stale_before(now: datetime | None = None) -> datetime:
    """Rows renewed before this moment belong to a process that no longer runs."""
    return (now or timezone.now()) - timedelta(seconds=float(mcp_settings.RUNNING_CALLS_STALE_SECONDS))


def visible_rows() -> QuerySet[RunningCall]:
    """The rows of calls still in progress somewhere: those a live process renews."""
    return RunningCall.objects.filter(seen_at__gte=stale_before())


def prune() -> int:
    """Delete the rows no process renews any more; returns how many."""
    deleted, _ = RunningCall.objects.filter(seen_at__lt=stale_before()).delete()
    return deleted


@dataclass
class Changes:
    """One tick's work for the database, gathered on the loop and done in one thread hop."""

    new: list[RunningCall] = field(default_factory=list)
    ended: list[int] = field(default_factory=list)
    renew: bool = False
    prune: bool = False
    has_rows: bool = False

    def __bool__(self) -> bool:
        return bool(self.new or self.ended or self.has_rows)


class RunningCalls:
    """The calls in progress on one event loop, and the sweeper that mirrors the long ones to the database."""

    def __init__(self) -> None:
        self.process = process_name()
        self.calls: dict[int, Stoppable] = {}
        self.written: set[int] = set()  # keys of calls that have a row
        self.ended: list[int] = []  # keys of written calls that ended since the last tick
        self._keys = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self._renewed = -float("inf")
        self._pruned = -float("inf")
        self._failing = False

    def add(self, call: Stoppable) -> int:
        """Register a call that has started; returns the key to :meth:`discard` it with when it ends."""
        key = next(self._keys)
        self.calls[key] = call
        if self._task is None:
            self._task = asyncio.ensure_future(self._sweep())
        return key

    def discard(self, key: int) -> None:
        del self.calls[key]
        if key in self.written:
            self.written.discard(key)
            self.ended.append(key)

    async def _sweep(self) -> None:
        # The first look comes a tick after the first call: by then a fast call has long ended, and the
        # sweeper is not started again for every call of a process answering only fast ones.
        try:
            while True:
                await asyncio.sleep(TICK_SECONDS)
                if not self.calls and not self.ended:
                    return
                await self.tick()
        finally:
            self._task = None

    async def tick(self) -> None:
        """Mirror this loop's long calls to the database and cancel those an administrator marked."""
        changes = self.changes(time.perf_counter())
        if not changes:
            return
        try:
            cancelled = await database_sync_to_async(self.apply)(changes)
        except Exception:
            self.failed(changes)
            return
        if self._failing:
            self._failing = False
            logger.warning("Calls in progress are recorded again")
        for key in cancelled:
            call = self.calls.get(key)
            if call is not None:
                call.stop_by_admin()

    def failed(self, changes: Changes) -> None:
        """Keep what a tick could not write for the next one; log the first failure of a series only."""
        self.written.difference_update(int(row.key) for row in changes.new)
        self.ended.extend(changes.ended)
        self._renewed = -float("inf")
        if not self._failing:
            self._failing = True
            logger.exception("Could not record the calls in progress; trying again every %g s", TICK_SECONDS)

    def changes(self, now: float) -> Changes:
        changes = Changes(ended=self.ended, renew=now - self._renewed >= RENEW_SECONDS)
        self.ended = []
        visible = mcp_settings.RUNNING_CALLS_VISIBLE_SECONDS
        if visible is not None:
            wall = timezone.now()
            for key, call in self.calls.items():
                age = now - call.started
                if key not in self.written and age >= float(visible):
                    self.written.add(key)
                    row = RunningCall(process=self.process, key=str(key), seen_at=wall, **call.describe())
                    row.started_at = wall - timedelta(seconds=age)
                    changes.new.append(row)
        changes.has_rows = bool(self.written)
        if changes.renew:
            self._renewed = now
        # Only a process that writes rows prunes them: one serving fast calls alone never touches the database.
        due = now - self._pruned >= float(mcp_settings.RUNNING_CALLS_STALE_SECONDS) / 2
        if changes.new or (changes.has_rows and due):
            changes.prune, self._pruned = True, now
        return changes

    def apply(self, changes: Changes) -> list[int]:
        """Write one tick's changes; returns the keys of this process's calls an administrator cancelled."""
        mine = RunningCall.objects.filter(process=self.process)
        if changes.prune:
            prune()
        if changes.ended:
            mine.filter(key__in=[str(key) for key in changes.ended]).delete()
        if changes.new:
            RunningCall.objects.bulk_create(changes.new, ignore_conflicts=True)
        if not changes.has_rows:
            return []
        if changes.renew:
            mine.update(seen_at=timezone.now())
        marked = mine.filter(cancel_requested_at__isnull=False).values_list("key", flat=True)
        return [int(key) for key in marked]


running_calls: PerLoop[RunningCalls] = PerLoop(RunningCalls)

"""The process's cache of the tool table: loaded once, served until a change invalidates it.

Sessions that find it empty at the same moment (many opening at once, or every session after a change) share
one load: the first starts it in a thread and the others wait for that load's result.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any

from channels.db import database_sync_to_async

from mcp_tools.models import GroupGrant, RateLimitOverride, Tool, UserGrant
from mcp_tools.tools.entries import entry_from_row, grants_of
from mcp_tools.tools.snapshot import Snapshot


class Catalog:
    """Loads enabled tools once and serves them until invalidated (by signals or change events)."""

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None
        self._generation = 0
        self._lock = threading.Lock()
        self._stamp = ""
        self._loading: tuple[int, Future[Snapshot]] | None = None  # the load under way, and its generation

    def invalidate(self, stamp: str = "") -> None:
        """Drop the snapshot; a repeated ``stamp`` (the same change heard again) is ignored."""
        with self._lock:
            if stamp and stamp == self._stamp:
                return
            self._stamp = stamp
            self._generation += 1
            self._snapshot = None

    async def get(self) -> Snapshot:
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        loading, first = self._join()
        if first:
            await database_sync_to_async(self._fill)(loading)
            return loading.result()
        return await asyncio.wrap_future(loading)

    def _join(self) -> tuple[Future[Snapshot], bool]:
        """The load of the current generation under way, and whether this caller is the one to run it."""
        with self._lock:
            if self._loading is not None and self._loading[0] == self._generation:
                return self._loading[1], False
            loading: Future[Snapshot] = Future()
            # Running: no waiter's cancellation can cancel it for the others.
            loading.set_running_or_notify_cancel()
            self._loading = (self._generation, loading)
            return loading, True

    def _fill(self, loading: Future[Snapshot]) -> None:
        """Run the load and settle ``loading`` in this thread, so that it settles even if its caller is gone."""
        try:
            loading.set_result(self._load())
        except BaseException as exc:
            loading.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            with self._lock:
                if self._loading is not None and self._loading[1] is loading:
                    self._loading = None

    def current(self) -> Snapshot:
        """The tools as they are now, read in this thread: for pages outside any session, such as the consent
        page (never the event loop). Read afresh, because a process serving only pages has no hub that
        would hear of changes made elsewhere."""
        return self._load()

    def _load(self) -> Snapshot:
        generation = self._generation
        users, groups = _grant_index(UserGrant, "user_id"), _grant_index(GroupGrant, "group_id")
        entries = tuple(
            entry_from_row(row, grants_of(row, users.get(row.pk, ()), groups.get(row.pk, ())))
            for row in Tool.objects.filter(enabled=True)
            .select_related("query", "approvers")
            .prefetch_related("sources")
            .order_by("name")
        )
        overrides = {(o.group_id, o.tool_id): o.rate for o in RateLimitOverride.objects.all()}
        names = frozenset(Tool.objects.values_list("name", flat=True))
        snapshot = Snapshot(entries, generation, overrides, names)
        with self._lock:
            if self._generation == generation:
                self._snapshot = snapshot
        return snapshot


def _grant_index(model: Any, column: str) -> dict[int, set[Any]]:
    """tool id -> granted ids, from one flat query (prefetching objects costs far more)."""
    index: dict[int, set[Any]] = {}
    for tool_id, granted in model.objects.values_list("tool_id", column):
        index.setdefault(tool_id, set()).add(granted)
    return index


catalog = Catalog()

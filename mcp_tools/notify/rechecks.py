"""What a change makes the hub re-check for its listeners: the tool list each one sees, the users they act
for and the credentials they hold; a listener whose user or credential no longer works is ended."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from channels.db import database_sync_to_async

from mcp_tools.access import credentials, permissions
from mcp_tools.access.authentication import forget_tokens
from mcp_tools.access.credentials import TOKEN_EXPIRED, TOKEN_REVOKED, USER_INACTIVE, credentials_problem
from mcp_tools.access.reach import reach_of
from mcp_tools.notify import counters
from mcp_tools.notify.events import ACCESS_EVENT, EVENT_TYPE, TOKEN_EVENT
from mcp_tools.notify.expiry import ExpiryTimers
from mcp_tools.notify.listeners import Listener, Listeners
from mcp_tools.tools.catalog import catalog

logger = logging.getLogger("mcp_tools")

End = Callable[[Listener, str], None]


class Rechecks:
    """Acts on changes for the ``listeners`` of one hub: ``end(listener, reason)`` cuts one off, and
    ``expiry`` times the credentials that still work."""

    def __init__(self, listeners: Listeners, end: End, expiry: ExpiryTimers) -> None:
        self._listeners = listeners
        self._end = end
        self._expiry = expiry
        # One re-check at a time: a poll that read a user before a change must not finish after the change's
        # own re-check, putting the old user back and telling the session its list changed back.
        self._one_at_a_time = asyncio.Lock()

    async def act_on(self, event: dict[str, Any]) -> bool:
        """Act on one group event of the kinds this module knows; False for any other type."""
        if event.get("type") not in (EVENT_TYPE, TOKEN_EVENT, ACCESS_EVENT):
            return False
        async with self._one_at_a_time:
            await self._act_on(event)
        return True

    async def _act_on(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == EVENT_TYPE:
            catalog.invalidate(str(event.get("stamp", "")))
        elif kind == TOKEN_EVENT:
            await self.recheck_tokens({(str(event.get("kind", credentials.SITE_TOKEN)), event.get("token"))})
            return
        else:
            users = event.get("users")
            await self.recheck_users(None if users is None else set(users))
        await self.announce()

    async def refresh(self, kinds: Iterable[str]) -> None:
        """Act on changes of these kinds whose details are unknown (the counters, a lost connection)."""
        async with self._one_at_a_time:
            await self._refresh(set(kinds))

    async def _refresh(self, kinds: set[str]) -> None:
        if counters.TOOLS in kinds:
            catalog.invalidate()
        if counters.ACCESS in kinds:
            await self.recheck_users(None)
        if counters.TOKENS in kinds:
            await self.recheck_tokens(None)
        await self.announce()

    def forget_cached(self) -> None:
        """Drop what this process cached before it first read the counters: it may predate changes elsewhere."""
        catalog.invalidate()
        forget_tokens()

    async def announce(self) -> None:
        """Tell each listener whose tool list changed."""
        snapshot = await catalog.get()
        for listener in list(self._listeners.members):
            try:
                listener.tools_changed(snapshot)
            except Exception:
                # A listener is transport code of any kind: one that fails must not keep the news from the
                # others, nor end the delivery of later events.
                logger.exception("A session failed to take a list_changed notification")

    async def recheck_users(self, user_ids: set[Any] | None) -> None:
        """Re-read these users (None: every local caller); end the callers who may no longer connect."""
        forget_tokens()
        callers = self._listeners.callers(user_ids)
        fresh = await permissions.reload(listener.user for listener in callers)
        for listener in callers:
            user = fresh.get(listener.user.pk)
            if user is None:
                self._end(listener, USER_INACTIVE)
                continue
            listener.user = user
            problem = credentials_problem(user, None)
            if problem is not None:
                self._end(listener, problem)

    async def recheck_tokens(self, keys: set[credentials.Key] | None) -> None:
        """Re-read these credentials ((kind, id); None: every local caller's); end callers whose credential
        no longer works."""
        forget_tokens()
        holders = self._listeners.holding(keys)
        if not holders:
            return
        found = await _rows_of(holders)
        kept, narrowed = [], False
        for listener in holders:
            kind, pk = credentials.key(listener.token)
            row = found[kind].get(pk)
            if row is None or row.user_id != getattr(listener.user, "pk", None):
                self._end(listener, TOKEN_REVOKED)
                continue
            listener.token.expires_at = row.expires_at
            if listener.token.is_expired:
                self._end(listener, TOKEN_EXPIRED)
                continue
            self._expiry.watch(listener)
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


async def _rows_of(holders: list[Listener]) -> dict[str, credentials.Rows]:
    """The current rows of the holders' credentials, read once per kind."""
    wanted: dict[str, set[Any]] = {}
    for listener in holders:
        kind, pk = credentials.key(listener.token)
        wanted.setdefault(kind, set()).add(pk)
    return {kind: await database_sync_to_async(credentials.rows)(kind, ids) for kind, ids in wanted.items()}

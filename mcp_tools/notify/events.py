"""list_changed: one Channels group event per committed change to tools."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, get_channel_layer
from django.db import transaction

from mcp_tools.access.credentials import SITE_TOKEN
from mcp_tools.conf import mcp_settings
from mcp_tools.notify import transactions
from mcp_tools.tools.catalog import catalog

logger = logging.getLogger("mcp_tools")
EVENT_TYPE = "mcp.tools_changed"
ACCESS_EVENT = "mcp.access_changed"
TOKEN_EVENT = "mcp.token_changed"
_background: set[asyncio.Task[Any]] = set()


def channel_layer() -> BaseChannelLayer | None:
    return get_channel_layer(mcp_settings.CHANNEL_LAYER)


def group_name() -> str:
    return str(mcp_settings.GROUP_NAME)


def schedule_tools_changed(using: str | None = None) -> None:
    """Announce a tool change once the current transaction commits (at most once per transaction)."""
    transactions.once(publish_tools_changed, using)


def publish_tools_changed() -> None:
    """Invalidate this process's catalog and tell every session, in every process."""
    stamp = uuid.uuid4().hex
    catalog.invalidate(stamp)
    send({"type": EVENT_TYPE, "stamp": stamp})


class AccessChange:
    """One announcement per transaction of the users whose groups, permissions or flags changed."""

    def __init__(self) -> None:
        self.users: set[Any] | None = set()

    def add(self, users: Iterable[Any] | None) -> None:
        if users is None:
            self.users = None
        elif self.users is not None:
            self.users.update(users)

    def __call__(self) -> None:
        send({"type": ACCESS_EVENT, "users": None if self.users is None else sorted(self.users)})


def schedule_access_changed(users: Iterable[Any] | None, using: str | None = None) -> None:
    """Announce, after commit, that ``users`` (None: anyone) may now see other tools."""
    transactions.gather(AccessChange, lambda change: change.add(users), using)


def send(event: dict[str, Any]) -> None:
    """Put ``event`` on the group, from sync code or from the event loop."""
    layer = channel_layer()
    if layer is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(group_send)(layer, event)
    else:
        task = loop.create_task(group_send(layer, event))
        _background.add(task)
        task.add_done_callback(_background.discard)


async def group_send(layer: BaseChannelLayer, event: dict[str, Any]) -> bool:
    """Send ``event`` to the group; False, logged, when the layer cannot be reached.

    The change is committed and its change counter bumped already: every process polls the counters while
    it cannot hear the layer, so a lost event costs at most the freshness bound, never the change.
    """
    try:
        await layer.group_send(group_name(), event)
    except Exception as exc:
        logger.warning(
            "Could not announce %s on the channel layer (%s: %s)", event.get("type"), type(exc).__name__, exc
        )
        return False
    return True


def schedule_token_changed(token_id: Any, using: str | None = None, kind: str = SITE_TOKEN) -> None:
    """Tell every process, after commit, to re-check the sessions opened with this credential."""
    event = {"type": TOKEN_EVENT, "kind": kind, "token": token_id}
    transaction.on_commit(lambda: send(event), using=using, robust=True)

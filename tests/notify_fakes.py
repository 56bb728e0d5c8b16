"""Stand-ins for the notify parts' tests: a channel layer that spans processes and fails on demand, and a
listener that records how it was told and ended."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

from channels.layers import InMemoryChannelLayer
from django.utils import timezone

from mcp_tools.notify.events import group_name

#: A message that makes :meth:`Layer.receive` fail as a lost connection would.
BREAK = "test.break"


class Layer:
    """An in-memory layer that the hub takes for one spanning processes (it is no ``InMemoryChannelLayer``),
    whose joins fail ``failing_joins`` times and whose receive fails once per :meth:`break_connection`."""

    def __init__(self, failing_joins: int = 0) -> None:
        self.inner = InMemoryChannelLayer()
        self.failing_joins = failing_joins
        self.attempts: list[float] = []  # monotonic time of every join attempt
        self.joined = asyncio.Event()
        self.discarded = asyncio.Event()

    async def new_channel(self, prefix: str = "specific.") -> str:
        return await self.inner.new_channel(prefix)

    async def group_add(self, group: str, channel: str) -> None:
        self.attempts.append(time.monotonic())
        if self.failing_joins:
            self.failing_joins -= 1
            raise ConnectionError("the layer is down")
        await self.inner.group_add(group, channel)
        self.joined.set()

    async def group_discard(self, group: str, channel: str) -> None:
        await self.inner.group_discard(group, channel)
        self.discarded.set()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        await self.inner.group_send(group, message)

    async def receive(self, channel: str) -> dict[str, Any]:
        message = await self.inner.receive(channel)
        if message["type"] == BREAK:
            raise ConnectionError("the connection to the layer was lost")
        return message

    async def send_event(self, event: dict[str, Any]) -> None:
        await self.inner.group_send(group_name(), event)

    async def break_connection(self, failing_joins: int = 0) -> None:
        """Fail the member's next receive; its next ``failing_joins`` joins fail too."""
        self.joined.clear()
        self.failing_joins = failing_joins
        await self.send_event({"type": BREAK})

    def members(self) -> int:
        return len(self.inner.groups.get(group_name(), {}))


class Token:
    """A credential as the hub sees one."""

    credential_kind = "token"

    def __init__(self, pk: Any, expires_at: datetime | None = None) -> None:
        self.pk = pk
        self.expires_at = expires_at

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class Listener:
    """Records the snapshots it is told of and why it was ended; ``ended_event`` is set once ended."""

    def __init__(self, user: Any = None, token: Any = None) -> None:
        self.user = user
        self.token = token
        self.told: list[Any] = []
        self.reasons: list[str] = []
        self.ended_event = asyncio.Event()

    def tools_changed(self, snapshot: Any) -> None:
        self.told.append(snapshot)

    def end(self, reason: str) -> None:
        self.reasons.append(reason)
        self.ended_event.set()

"""Who the hub works for in this event loop: the listeners it tells and ends, and the holders that keep it
running without being told anything.

A listener is any caller's session or stream, on any transport; this module says what the hub asks of one
(:class:`Listener`), so that the hub never needs to know the server's session types.
"""

from __future__ import annotations

from typing import Any, Protocol

from mcp_tools.access import credentials, permissions
from mcp_tools.conf import mcp_settings
from mcp_tools.tools.catalog import catalog


class Listener(Protocol):
    """A caller's session or stream on any transport: told when its own list changes, ended when its
    credentials stop working."""

    user: Any
    token: Any

    def tools_changed(self, snapshot: Any) -> None: ...

    def end(self, reason: str) -> None: ...


class Listeners:
    """The listeners of one hub and the holders that retain it; the hub runs while either is not empty."""

    def __init__(self) -> None:
        self.members: set[Listener] = set()
        self.holders: set[object] = set()

    @property
    def idle(self) -> bool:
        return not self.members and not self.holders

    def __contains__(self, listener: object) -> bool:
        return listener in self.members

    def callers(self, user_ids: set[Any] | None) -> list[Listener]:
        """The signed-in listeners among users ``user_ids`` (None: every user)."""
        return [
            listener
            for listener in list(self.members)
            if getattr(listener.user, "is_authenticated", False) and (user_ids is None or listener.user.pk in user_ids)
        ]

    def holding(self, keys: set[credentials.Key] | None) -> list[Listener]:
        """The listeners connected with a credential among ``keys`` ((kind, id); None: any credential)."""
        return [
            listener
            for listener in list(self.members)
            if listener.token is not None and (keys is None or credentials.key(listener.token) in keys)
        ]

    def admits(self, user: Any) -> bool:
        """Whether ``user`` may open one more connection here (anonymous callers share one allowance)."""
        key = _connection_key(user)
        held = sum(1 for listener in list(self.members) if _connection_key(listener.user) == key)
        return held < int(mcp_settings.MAX_CONNECTIONS_PER_USER)


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

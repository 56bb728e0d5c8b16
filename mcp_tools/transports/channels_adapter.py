"""Message dispatch without Channels' per-message database hop: the one place that relies on how
``channels.consumer.AsyncConsumer.dispatch`` is written (``tests/test_channels_adapter.py`` pins it).

Since Channels 4.2, ``AsyncConsumer.dispatch`` awaits ``aclose_old_connections()`` before every handler: a
trip to the database thread for each frame, queued behind whatever ORM work that thread is doing. The
consumers here reach the database only through ``database_sync_to_async``, which closes stale connections
before and after each call itself, so the trip buys nothing and costs every frame a wait. Channels has no
setting or documented hook to leave it out; overriding ``dispatch`` is the only way, and this is it.
"""

from __future__ import annotations

from typing import Any

from channels.consumer import get_handler_name


class DirectDispatch:
    """Mixin for an ``AsyncConsumer`` subclass: Channels' dispatch, minus ``aclose_old_connections()``."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

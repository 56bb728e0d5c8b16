"""Ordered, non-blocking delivery of outgoing messages for a connection."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_tools.protocol.jsonrpc import encode

logger = logging.getLogger("mcp_tools")


class Outbox:
    """Queues messages from sync code and flushes them in order; holds no task while idle."""

    def __init__(self, write: Callable[[str], Awaitable[None]]) -> None:
        self._write = write
        self._queue: deque[Any] = deque()
        self._flushing: asyncio.Task[None] | None = None
        self.closed = False

    def put(self, message: Any) -> None:
        if self.closed:
            return
        self._queue.append(message)
        if self._flushing is None:
            self._flushing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while self._queue and not self.closed:
                await self._write(encode(self._queue.popleft()))
        except Exception:
            self.closed = True
            logger.debug("Dropping outgoing messages for a closed connection", exc_info=True)
        finally:
            self._flushing = None

    async def drain(self) -> None:
        """Wait until everything queued so far has been written."""
        while self._flushing is not None:
            await asyncio.shield(self._flushing)

    def close(self) -> None:
        self.closed = True
        self._queue.clear()

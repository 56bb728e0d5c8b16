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
    """Queues messages from sync code and flushes them in order; holds no task while idle.

    A client that stops reading while it keeps asking would make the queue grow without end: past
    ``limit`` bytes of unsent text the outbox drops everything and calls ``overflow`` (which closes the
    connection).
    """

    def __init__(
        self,
        write: Callable[[str], Awaitable[None]],
        *,
        limit: int | None = None,
        overflow: Callable[[], None] | None = None,
    ) -> None:
        self._write = write
        self._queue: deque[str] = deque()
        # The write under way (a flush task, or a send's own write), which later messages queue behind.
        self._flushing: asyncio.Future[None] | None = None
        self.closed = False
        self.unsent = 0  # bytes (as characters) queued and not yet written
        self.limit = limit
        self._overflow = overflow

    def put(self, message: Any) -> None:
        if self.closed:
            return
        text = encode(message)
        self._queue.append(text)
        self.unsent += len(text)
        if self.limit is not None and self.unsent > self.limit:
            logger.warning("Closing a connection whose client left %d bytes unread", self.unsent)
            self.close()
            if self._overflow is not None:
                self._overflow()
            return
        if self._flushing is None:
            self._flushing = asyncio.ensure_future(self._flush())

    async def send(self, message: Any) -> None:
        """Write ``message`` from the calling task when nothing waits ahead of it (no flush task to start);
        otherwise queue it behind what does."""
        if self.closed or self._flushing is not None or self._queue:
            self.put(message)
            return
        text = encode(message)
        writing = self._flushing = asyncio.get_running_loop().create_future()
        try:
            await self._write(text)
        except Exception:
            self.closed = True
            logger.debug("Dropping outgoing messages for a closed connection", exc_info=True)
        finally:
            self._flushing = None
            writing.set_result(None)
            if self._queue and not self.closed:
                self._flushing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while self._queue and not self.closed:
                text = self._queue.popleft()
                await self._write(text)
                self.unsent -= len(text)
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
        self.unsent = 0

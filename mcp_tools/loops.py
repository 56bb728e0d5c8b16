"""Objects owned by one event loop: a process may run several (a server, ``mcp_stdio``, tests), and timers,
tasks and futures must never cross from one to another."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """One ``factory()`` instance per running event loop, dropped with its loop."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._instances: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        # The loop asked for last and its instance: a process nearly always runs one loop, asked many times
        # per request, and a weak dictionary's lookup costs more than a weak reference's call.
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], T] | None = None

    def __call__(self) -> T:
        """The instance of the running loop (RuntimeError outside one)."""
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0]() is loop:
            return last[1]
        found = self._instances.get(loop)
        if found is None:
            found = self._instances[loop] = self._factory()
        self._last = (weakref.ref(loop), found)
        return found

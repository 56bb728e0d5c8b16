"""One long-lived thread that runs sync work for event loops, handed over through a queue.

For work that must leave the event loop (a blocking database write) many times a second, one at a time:
a queue and a wake-up of the loop cost a fraction of what ``sync_to_async`` (context copies,
thread-sensitive dispatch) or an executor (its semaphore, future chaining) do for each hand-over. The thread
belongs to its process (a forked worker starts its own) and lives as long as it does, so a database
connection it holds is closed by Django's own rules, never by a thread's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")
Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class HandoffThread:
    """``await thread.run(func, *args)`` runs ``func(*args)`` in this thread, in the order handed over."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._queue: SimpleQueue[Job] | None = None
        self._pid = 0

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs().put((loop, future, func, args))
        return await future

    def _jobs(self) -> SimpleQueue[Job]:
        jobs = self._queue
        if jobs is not None and self._pid == os.getpid():
            return jobs
        with self._lock:
            if self._queue is None or self._pid != os.getpid():
                self._queue = SimpleQueue()
                self._pid = os.getpid()
                # A daemon: an idle thread must not keep a process from exiting.
                threading.Thread(target=_serve, args=(self._queue,), name=self.name, daemon=True).start()
            return self._queue


def _serve(jobs: SimpleQueue[Job]) -> None:
    while True:
        loop, future, func, args = jobs.get()
        try:
            outcome: tuple[bool, Any] = (True, func(*args))
        except BaseException as exc:  # handed back to the awaiting task, which decides
            outcome = (False, exc)
        # A loop closed meanwhile (RuntimeError) has nobody waiting for this any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, outcome)
        del loop, future, func, args, outcome


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.cancelled():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)

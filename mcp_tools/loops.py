"""Objects owned by one event loop: a process may run several (a server, ``mcp_stdio``, tests), and timers,
tasks and futures must never cross from one to another."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

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


# How early a deadline may pass: uvloop's timers fire to the millisecond, as asyncio.timeout's do under it.
EARLY_SECONDS = 0.001


class Deadline:
    """``asyncio.timeout(delay)`` for the running task, as a plain ``with`` block, sharing one timer.

    Deadlines of one length are set in the order they fall due, so a loop keeps them in insertion order and
    arms a single timer for the first: setting and clearing one is a dictionary insert and delete, where
    ``asyncio.timeout`` schedules and cancels a timer handle in the loop's heap for every call. When a
    deadline passes, its task is cancelled; the block then ends with TimeoutError, unless the task was
    also cancelled for another reason, exactly as under ``asyncio.timeout``.
    """

    __slots__ = ("_cancelling", "_deadlines", "_task", "expired", "when")

    def __init__(self, delay: float) -> None:
        self._deadlines = deadlines = _deadlines(delay)
        self.when = deadlines.loop.time() + delay
        self.expired = False

    def __enter__(self) -> Deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Deadline should be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._deadlines.add(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if not self.expired:
            self._deadlines.pending.pop(self, None)
        elif self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc

    def expire(self) -> None:
        self.expired = True
        self._task.cancel()


class Alarm:
    """``loop.call_later(delay, callback)`` sharing one timer among the alarms of one delay, as deadlines do:
    for short-lived alarms that are nearly always cancelled before they ring."""

    __slots__ = ("_callback", "_deadlines", "when")

    def __init__(self, delay: float, callback: Callable[[], object]) -> None:
        self._callback = callback
        self._deadlines = deadlines = _deadlines(delay)
        self.when = deadlines.loop.time() + delay
        deadlines.add(self)

    def cancel(self) -> None:
        self._deadlines.pending.pop(self, None)

    def expire(self) -> None:
        try:
            self._callback()
        except Exception as exc:  # as the loop does for a callback of its own: reported, the others still run
            self._deadlines.loop.call_exception_handler({"message": "Exception in an alarm", "exception": exc})


class _Deadlines:
    """The pending deadlines (or alarms) of one length on one loop, first due first, and the timer of the
    first."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending: dict[Deadline | Alarm, None] = {}
        self.timer: asyncio.TimerHandle | None = None

    def add(self, deadline: Deadline | Alarm) -> None:
        self.pending[deadline] = None
        # An armed timer is due no later than any pending deadline, this one included; it stays armed when
        # the deadline it was set for is cleared, and moves on to the next one when it fires.
        if self.timer is None:
            self.timer = self.loop.call_at(deadline.when, self.fire)

    def fire(self) -> None:
        self.timer = None
        now = self.loop.time()
        while self.pending:
            first = next(iter(self.pending))
            if first.when > now + EARLY_SECONDS:
                self.timer = self.loop.call_at(first.when, self.fire)
                return
            del self.pending[first]
            first.expire()


_deadlines_per_loop: PerLoop[dict[float, _Deadlines]] = PerLoop(dict)


def _deadlines(delay: float) -> _Deadlines:
    """The running loop's deadlines of length ``delay``."""
    by_length = _deadlines_per_loop()
    found = by_length.get(delay)
    if found is None:
        found = by_length[delay] = _Deadlines(asyncio.get_running_loop())
    return found


async def first_done(*futures: asyncio.Future[Any]) -> None:
    """Wait until one of ``futures`` is done: ``asyncio.wait(futures, return_when=FIRST_COMPLETED)`` without
    the sets it builds of them and returns, for callers that look at the futures themselves."""
    if any(future.done() for future in futures):
        return
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(_done: asyncio.Future[Any]) -> None:
        if not waiter.done():
            waiter.set_result(None)

    for future in futures:
        future.add_done_callback(wake)
    try:
        await waiter
    finally:
        for future in futures:
            future.remove_done_callback(wake)


def in_own_loop(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``func(*args)`` on an event loop of its own, in a thread of its own, and wait for it (from a view).

    The server's database work then runs in threads with connections of their own, as it does under a real
    transport; run through ``async_to_sync`` it would run in this request's thread and close or spoil this
    request's connection (and its transaction, under ATOMIC_REQUESTS).
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-own-loop") as pool:
        return pool.submit(lambda: asyncio.run(func(*args))).result()  # type: ignore[arg-type]

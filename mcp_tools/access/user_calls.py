"""A user's calls in progress across all its sessions and transports: one lease per call, held to its last thread.

``MAX_CALLS_PER_USER`` bounds them (a tool's ``max_concurrent_calls``, where set, bounds that tool's calls
per user instead, counted apart). Each process counts exactly in memory; with a shared cache the calls of
every process count too (``concurrency.SharedCount``). A call's place is given back when the call AND every
thread job it started have ended: a sync tool that runs past its time limit keeps its thread, so it keeps
its place until the thread returns. Anonymous callers count together, as one user.
"""

from __future__ import annotations

import threading
from typing import Any

from mcp_tools.access import concurrency
from mcp_tools.access.concurrency import Counted, SharedCount, shared
from mcp_tools.conf import mcp_settings

ANONYMOUS = "anonymous"
_lock = threading.Lock()
_running: dict[str, int] = {}


def user_key(user: Any) -> str:
    return str(user.pk) if getattr(user, "is_authenticated", False) else ANONYMOUS


def too_many(limit: int) -> str:
    return f"Too many of your calls are in progress (at most {limit}); retry when one ends."


def limit_for(tool_limit: int | None) -> int:
    return int(tool_limit or mcp_settings.MAX_CALLS_PER_USER)


class Lease:
    """One call's place among its user's calls in progress, held by the call and by each of its thread jobs."""

    __slots__ = ("_holders", "counter", "ended", "key", "user")

    def __init__(self, user: str, key: str) -> None:
        self.user = user  # whose turn a thread job waits for
        self.key = key
        self.ended = False  # the call has been answered: its queued jobs are dropped
        self._holders = 1
        self.counter: SharedCount | None = None  # where it is counted in the shared cache too

    def hold(self) -> bool:
        """One more hold, for a thread job; False once the place has been given back (nothing held)."""
        with _lock:
            if not self._holders:
                return False
            self._holders += 1
            return True

    def drop(self) -> bool:
        """Let go of one hold; True when it was the last, the place is free here and ``give_back`` is due."""
        with _lock:
            self._holders -= 1
            if self._holders:
                return False
            left = _running[self.key] - 1
            if left:
                _running[self.key] = left
            else:
                del _running[self.key]
        return True

    def end(self) -> bool:
        """The call's own hold, let go when it is answered; True when no thread job still holds the place."""
        self.ended = True
        return self.drop()

    def give_back_soon(self) -> None:
        """Give the shared place back from whichever thread let go last: at once off the loop, as a task on it."""
        if self.counter is not None:
            concurrency.give_back_later([self.counter.key])


def place_key(user: Any, tool_id: int, tool_limit: int | None) -> str:
    """Where a call of the tool counts among ``user``'s: apart for a tool with a limit of its own."""
    who = user_key(user)
    return who if tool_limit is None else f"{who}.tool.{tool_id}"


def shared_counter(key: str) -> SharedCount:
    return SharedCount("user." + key)


async def take(
    user: Any, tool_id: int, tool_limit: int | None, seconds: float, counted: Counted | None = None
) -> Lease | None:
    """A lease for one more call of ``user`` that may run ``seconds``, or None when the limit is reached.

    ``counted``: the place in the shared cache, already counted with the call's rates; given back when this
    process refuses the call."""
    key = place_key(user, tool_id, tool_limit)
    limit = limit_for(tool_limit)
    with _lock:
        refused = _running.get(key, 0) >= limit
        if not refused:
            _running[key] = _running.get(key, 0) + 1
    if refused:
        if counted is not None and counted.taken:
            concurrency.give_back_later([counted.counter.key])
        return None
    lease = Lease(user_key(user), key)
    if not shared():
        return lease
    counter = shared_counter(key) if counted is None else counted.counter
    try:
        taken = await counter.take(limit, seconds) if counted is None else counted.taken
    except BaseException:
        lease.end()  # cancelled while counting: the place taken here is given back
        raise
    if taken is False:
        lease.end()
        return None
    if taken:
        lease.counter = counter
    return lease


def running(key: str) -> int:
    """This process's calls in progress under ``key`` (a user key, or ``USER.tool.ID``)."""
    with _lock:
        return _running.get(key, 0)

"""The hand-over thread: work runs in its one thread, in order, and its result or exception comes back to the
awaiting task; an awaiter that gave up is left alone; a forked child starts a thread of its own."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from mcp_tools.handoff import HandoffThread


async def test_results_and_exceptions_come_back_from_one_thread_in_order() -> None:
    thread = HandoffThread("test-handoff")
    seen: list[tuple[int, str]] = []

    def job(number: int) -> int:
        seen.append((number, threading.current_thread().name))
        return number * 2

    def fails() -> None:
        raise LookupError("no such row")

    results = await asyncio.gather(*(thread.run(job, n) for n in range(20)))
    with pytest.raises(LookupError, match="no such row"):
        await thread.run(fails)

    assert results == [n * 2 for n in range(20)]
    assert [number for number, _name in seen] == list(range(20))
    assert {name for _number, name in seen} == {"test-handoff"}
    assert threading.current_thread().name != "test-handoff"


async def test_an_awaiter_that_gave_up_is_left_alone_and_the_thread_goes_on() -> None:
    thread = HandoffThread("test-handoff-cancel")
    started, release = threading.Event(), threading.Event()

    def blocks() -> str:
        started.set()
        release.wait(10)
        return "done"

    waiting = asyncio.ensure_future(thread.run(blocks))
    assert await asyncio.to_thread(started.wait, 10)
    waiting.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    assert await thread.run(lambda: "next") == "next"


async def test_a_forked_child_starts_its_own_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    thread = HandoffThread("test-handoff-fork")
    first = await thread.run(threading.get_ident)
    parent = os.getpid()
    # A forked child has the parent's objects but not its threads: it knows itself by its process id.
    monkeypatch.setattr(os, "getpid", lambda: parent + 1)

    second = await thread.run(threading.get_ident)

    assert first != second and await thread.run(threading.get_ident) == second

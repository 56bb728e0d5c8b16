"""The tools' thread pool: users served in turn, a share per user, and threads that outlive their calls."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from types import SimpleNamespace
from typing import Any

import pytest
from channels.db import database_sync_to_async

from mcp_tools.access import user_calls
from mcp_tools.access.user_calls import Lease
from mcp_tools.tools import threads
from mcp_tools.tools.threads import FairExecutor, current_lease

TIMEOUT = 10


@pytest.fixture(autouse=True)
def counted_in_this_process(settings: Any) -> None:
    """Counts in this process only: the shared cache's counters are the cross-process tests' subject, and a
    place these tests end without giving it back there would stay taken for the next test."""
    settings.CACHES = {**settings.CACHES, "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def user(pk: int) -> Any:
    return SimpleNamespace(pk=pk, is_authenticated=True)


@pytest.fixture
def executors() -> Iterator[Callable[[int, int], FairExecutor]]:
    made: list[FairExecutor] = []

    def make(threads: int, user_threads: int) -> FairExecutor:
        made.append(FairExecutor(threads, user_threads, name="test-pool"))
        return made[-1]

    yield make
    for executor in made:
        executor.shutdown(cancel_futures=True)


def submit_as(executor: FairExecutor, lease: Lease | None, fn: Callable[[], Any]) -> Future[Any]:
    """Submit ``fn`` as a call holding ``lease`` would."""

    def submit() -> Future[Any]:
        current_lease.set(lease)
        return executor.submit(fn)

    return contextvars.copy_context().run(submit)


@pytest.fixture
def leases() -> Iterator[Callable[..., Any]]:
    """Take leases of users by pk; those whose call a test leaves running end afterwards."""
    taken: list[Lease] = []

    async def take(*pks: int) -> list[Lease]:
        for pk in pks:
            lease = await user_calls.take(user(pk), 0, None, 60)
            assert lease is not None
            taken.append(lease)
        return taken[-len(pks) :]

    yield take
    for lease in taken:
        if not lease.ended:
            lease.end()


def blocker(executor: FairExecutor, lease: Lease | None) -> tuple[Future[Any], threading.Event]:
    """A job that holds its thread until the returned event is set; returns once it runs."""
    started, gate = threading.Event(), threading.Event()

    def block() -> None:
        started.set()
        assert gate.wait(TIMEOUT)

    future = submit_as(executor, lease, block)
    assert started.wait(TIMEOUT)
    return future, gate


def finished(futures: list[Future[Any]]) -> None:
    _done, pending = wait(futures, TIMEOUT)
    assert not pending


async def test_queued_jobs_of_several_users_are_served_in_turn_each_in_its_own_order(executors, leases):
    executor = executors(1, 1)
    a, b, c, first = await leases(1, 2, 3, 4)
    order: list[str] = []
    held, gate = blocker(executor, first)

    jobs = [("a1", a), ("a2", a), ("a3", a), ("b1", b), ("b2", b), ("c1", c)]
    futures = [submit_as(executor, lease, lambda name=name: order.append(name)) for name, lease in jobs]
    gate.set()
    finished([held, *futures])

    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"]


async def test_a_user_holds_at_most_its_share_of_threads_while_others_are_served(executors, leases):
    executor = executors(3, 2)
    a, b = await leases(1, 2)
    first, first_gate = blocker(executor, a)
    second, second_gate = blocker(executor, a)
    third_ran = threading.Event()
    third = submit_as(executor, a, third_ran.set)

    other = submit_as(executor, b, lambda: "served")
    answer = other.result(TIMEOUT)
    held = (executor.busy("1"), executor.queued("1"), third_ran.is_set())
    first_gate.set()
    third.result(TIMEOUT)
    second_gate.set()
    finished([first, second])

    assert answer == "served"
    assert held == (2, 1, False)


async def test_a_queued_job_whose_call_has_ended_is_dropped_and_gives_the_place_back(executors, leases):
    executor = executors(1, 1)
    (other,) = await leases(9)
    held, gate = blocker(executor, other)
    (lease,) = await leases(1)
    ran = threading.Event()
    job = submit_as(executor, lease, ran.set)

    last = lease.end()
    counted = user_calls.running("1")
    gate.set()
    finished([held, job])

    assert (last, counted) == (False, 1)
    assert job.cancelled()
    assert not ran.is_set()
    assert user_calls.running("1") == 0


async def test_a_queued_job_cancelled_with_its_call_lets_go_of_the_place_at_once(executors, leases):
    executor = executors(1, 1)
    (other,) = await leases(9)
    held, gate = blocker(executor, other)
    (lease,) = await leases(1)
    job = submit_as(executor, lease, lambda: None)

    cancelled = job.cancel()
    last = lease.end()
    gate.set()
    finished([held])

    assert (cancelled, last, executor.queued("1")) == (True, True, 0)
    assert user_calls.running("1") == 0


async def test_a_thread_past_its_calls_time_limit_keeps_the_users_place_and_thread_until_it_returns(
    executors, leases, settings
):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CALLS_PER_USER": 1}
    executor = executors(2, 1)
    (lease,) = await leases(1)
    started, gate = threading.Event(), threading.Event()

    def hang() -> str:
        started.set()
        assert gate.wait(TIMEOUT)
        return "late"

    async def call() -> str:
        current_lease.set(lease)
        result: str = await database_sync_to_async(hang, thread_sensitive=False, executor=executor)()
        return result

    task = asyncio.create_task(call())
    assert await asyncio.to_thread(started.wait, TIMEOUT)
    # The call's time limit passes: its task is cancelled and it is answered at once, its thread still running.
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    last = lease.end()
    while_running = (await user_calls.take(user(1), 0, None, 60), executor.busy("1"))
    gate.set()
    await asyncio.to_thread(executor.shutdown)
    after = await user_calls.take(user(1), 0, None, 60)

    assert last is False
    assert while_running == (None, 1)
    assert after is not None
    assert after.end() is True


async def test_the_pool_follows_the_settings(settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TOOL_THREADS": 6}
    derived = threads.pool()
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TOOL_THREADS": 3, "USER_THREADS": 3}
    configured = threads.pool()

    assert (derived.threads, derived.user_threads) == (6, 1)
    assert (configured.threads, configured.user_threads) == (3, 3)


async def test_work_left_behind_by_an_answered_call_runs_in_its_users_turn_holding_no_place(executors, leases):
    executor = executors(1, 1)
    (lease,) = await leases(1)
    lease.end()

    result = submit_as(executor, lease, lambda: "ran").result(TIMEOUT)

    assert (result, user_calls.running("1")) == ("ran", 0)


class CountedCondition(threading.Condition):
    """A condition that counts the waiters it was asked to wake."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notified = 0

    def notify(self, n: int = 1) -> None:
        self.notified += n
        super().notify(n)


async def test_a_job_ending_with_nothing_of_its_users_queued_wakes_no_idle_thread(
    executors, leases, monkeypatch: pytest.MonkeyPatch
):
    with monkeypatch.context() as patched:
        patched.setattr(threading, "Condition", CountedCondition)
        executor = executors(4, 2)
    condition = executor._condition
    assert isinstance(condition, CountedCondition)
    a, b = await leases(1, 2)

    # One call after another, as one session's: each job's submit wakes a thread, and its end none.
    answers = [submit_as(executor, lease, lambda n=n: n).result(TIMEOUT) for n, lease in enumerate([a, b, a])]
    alone = condition.notified
    # A job ending while its user waits for its share wakes a thread for the job now free to run.
    held, gate = blocker(executor, a)
    second, second_gate = blocker(executor, a)
    third = submit_as(executor, a, lambda: "third")
    before = condition.notified
    gate.set()
    assert third.result(TIMEOUT) == "third"
    second_gate.set()
    finished([held, second])

    assert (answers, alone) == ([0, 1, 2], 3)
    # The first blocker's end, with the third job queued; not the third's or the second's, with nothing queued.
    assert condition.notified - before == 1

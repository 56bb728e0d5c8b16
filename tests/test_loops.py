"""Objects owned by one event loop: each loop gets its own, asked for again it gets the same."""

from __future__ import annotations

import asyncio

import pytest

from mcp_tools.loops import Alarm, Deadline, PerLoop, first_done


def test_each_loop_has_its_own_instance_and_keeps_it() -> None:
    per_loop = PerLoop(object)

    async def twice() -> tuple[object, object]:
        return per_loop(), per_loop()

    first = asyncio.run(twice())
    second = asyncio.run(twice())

    assert first[0] is first[1]
    assert second[0] is second[1]
    assert first[0] is not second[0]


def test_loops_taking_turns_each_find_their_own() -> None:
    per_loop = PerLoop(object)
    one, two = asyncio.new_event_loop(), asyncio.new_event_loop()

    async def get() -> object:
        return per_loop()

    try:
        seen = [loop.run_until_complete(get()) for loop in (one, two, one, two)]
    finally:
        one.close()
        two.close()

    assert seen[0] is seen[2] and seen[1] is seen[3] and seen[0] is not seen[1]


async def test_a_deadline_that_passes_ends_its_block_with_timeout_error_and_leaves_the_task_uncancelled() -> None:
    with pytest.raises(TimeoutError), Deadline(0.01):
        await asyncio.sleep(1)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # no cancellation left over for the next wait


async def test_a_block_done_in_time_clears_its_deadline_and_later_ones_still_pass() -> None:
    with Deadline(0.05) as early:
        await asyncio.sleep(0)
    assert not early.expired

    async def slow() -> str:
        with Deadline(0.05):
            await asyncio.sleep(1)
        return "finished"

    async def quick() -> str:
        with Deadline(0.05):
            await asyncio.sleep(0.01)
        return "finished"

    results = await asyncio.gather(slow(), quick(), slow(), return_exceptions=True)
    assert [type(r) for r in results] == [TimeoutError, str, TimeoutError]


async def test_a_cancellation_from_outside_stays_a_cancellation_when_the_deadline_passes_too() -> None:
    entered = asyncio.Event()

    async def call() -> None:
        with Deadline(0.02):
            entered.set()
            try:
                await asyncio.sleep(1)
            finally:
                await asyncio.sleep(0.05)  # the deadline passes while the cancellation is handled

    task = asyncio.ensure_future(call())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_deadlines_of_different_lengths_pass_in_their_own_time() -> None:
    async def wait(delay: float) -> float:
        started = asyncio.get_running_loop().time()
        with pytest.raises(TimeoutError), Deadline(delay):
            await asyncio.sleep(1)
        return asyncio.get_running_loop().time() - started

    long, short = await asyncio.gather(wait(0.2), wait(0.02))
    assert short < 0.15 <= long


async def test_an_alarm_rings_once_after_its_delay_unless_cancelled_and_a_failing_one_stops_no_other() -> None:
    rung: list[str] = []
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    def fail() -> None:
        raise ValueError("broken")

    Alarm(0.01, fail)
    Alarm(0.01, lambda: rung.append("first"))
    Alarm(0.01, lambda: rung.append("cancelled")).cancel()
    Alarm(0.02, lambda: rung.append("second"))
    await asyncio.sleep(0.005)
    assert rung == []
    await asyncio.sleep(0.05)

    assert rung == ["first", "second"]
    assert [type(context["exception"]) for context in reported] == [ValueError]


async def test_first_done_returns_once_one_future_is_done_and_leaves_no_callback_behind() -> None:
    loop = asyncio.get_running_loop()
    one, two = loop.create_future(), loop.create_future()
    loop.call_later(0.01, two.set_result, None)
    await first_done(one, two)
    assert two.done() and not one.done()
    one.set_result(None)  # no waiter left to wake
    await first_done(one, loop.create_future())  # returns at once: one is done


async def test_first_done_cancelled_propagates_and_detaches() -> None:
    pending = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(first_done(pending))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    pending.set_result(None)
    await asyncio.sleep(0)

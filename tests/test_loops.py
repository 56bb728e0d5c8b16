"""Objects owned by one event loop: each loop gets its own, asked for again it gets the same."""

from __future__ import annotations

import asyncio

from mcp_tools.loops import PerLoop


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

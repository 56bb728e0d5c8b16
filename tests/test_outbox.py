"""The outbox of a connection: order, and the end of a client that stops reading."""

from __future__ import annotations

import asyncio

from mcp_tools.transports.outbox import Outbox


async def test_messages_are_written_in_order() -> None:
    written: list[str] = []

    async def write(text: str) -> None:
        written.append(text)

    outbox = Outbox(write)
    for number in range(3):
        outbox.put({"n": number})
    await outbox.drain()

    assert written == ['{"n":0}', '{"n":1}', '{"n":2}']
    assert outbox.unsent == 0


async def test_a_client_that_stops_reading_is_cut_off_past_the_limit_of_unsent_bytes() -> None:
    reading = asyncio.Event()  # never set: the client never reads
    overflowed: list[bool] = []

    async def write(text: str) -> None:
        await reading.wait()

    outbox = Outbox(write, limit=100, overflow=lambda: overflowed.append(True))
    for _ in range(10):
        outbox.put({"text": "x" * 20})

    assert overflowed == [True]
    assert outbox.closed and outbox.unsent == 0
    outbox.put({"late": True})  # nothing more is kept
    assert outbox.unsent == 0

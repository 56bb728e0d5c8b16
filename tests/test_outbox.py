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


async def test_a_send_writes_from_its_own_task_when_nothing_waits_ahead() -> None:
    writers: list[asyncio.Task[object] | None] = []

    async def write(text: str) -> None:
        writers.append(asyncio.current_task())

    outbox = Outbox(write)
    await outbox.send({"n": 0})

    assert writers == [asyncio.current_task()]


async def test_a_send_goes_behind_what_is_queued_and_what_is_put_meanwhile_goes_behind_it() -> None:
    written: list[str] = []
    release = asyncio.Event()

    async def write(text: str) -> None:
        if text == '{"n":"held"}':
            await release.wait()
        written.append(text)

    outbox = Outbox(write)
    outbox.put({"n": 0})
    await outbox.send({"n": 1})  # queued behind the flush of n=0
    await outbox.drain()
    sending = asyncio.ensure_future(outbox.send({"n": "held"}))
    await asyncio.sleep(0)  # the send is now writing, held
    outbox.put({"n": 2})
    release.set()
    await asyncio.wait_for(sending, 5)
    await asyncio.wait_for(outbox.drain(), 5)

    assert written == ['{"n":0}', '{"n":1}', '{"n":"held"}', '{"n":2}']

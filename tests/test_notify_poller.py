"""The change-counter poller on its own, and the hub's poll interval as the channel layer comes and goes."""

from __future__ import annotations

import asyncio

import pytest
from django.db import transaction

from mcp_tools.notify import counters, group
from mcp_tools.notify.hub import Hub
from mcp_tools.notify.poller import Poller
from tests.db import db_call, lost_connection
from tests.notify_fakes import Layer
from tests.websocket import TIMEOUT

pytestmark = pytest.mark.django_db(transaction=True)


class Reads:
    """Counts the poller's reads of the counters; ``failing`` reads meet a lost connection first."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, failing: int = 0) -> None:
        self.count = 0
        self.failing = failing
        self.happened = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._read = counters.read
        monkeypatch.setattr(counters, "read", self.read)

    def read(self) -> counters.Counters:
        self.count += 1
        self._loop.call_soon_threadsafe(self.happened.set)
        if self.failing:
            self.failing -= 1
            raise lost_connection()
        return self._read()

    async def next(self) -> int:
        self.happened.clear()
        await asyncio.wait_for(self.happened.wait(), TIMEOUT)
        return self.count


class Changes:
    def __init__(self) -> None:
        self.kinds: list[set[str]] = []
        self.firsts = 0

    async def changed(self, kinds: set[str]) -> None:
        self.kinds.append(kinds)

    def first(self) -> None:
        self.firsts += 1


def bump_tools() -> None:
    with transaction.atomic():
        counters.bump(counters.TOOLS)


async def test_the_counters_are_read_once_per_interval_and_a_change_is_reported_by_kind(monkeypatch) -> None:
    reads, changes = Reads(monkeypatch), Changes()
    poller = Poller(lambda: 3600.0, changes.changed, changes.first)

    await poller.ensure_fresh()
    await poller.ensure_fresh()
    after_two = (reads.count, changes.firsts, list(changes.kinds))
    poller.expire()
    await poller.ensure_fresh()
    unchanged = list(changes.kinds)
    await db_call(bump_tools)
    poller.expire()
    await poller.ensure_fresh()

    assert after_two == (1, 1, [])
    assert unchanged == []
    assert (reads.count, changes.firsts, changes.kinds) == (3, 1, [{counters.TOOLS}])


async def test_a_lost_database_is_read_again_at_the_next_interval_not_at_every_request(
    monkeypatch, caplog: pytest.LogCaptureFixture
) -> None:
    reads, changes = Reads(monkeypatch, failing=1), Changes()
    poller = Poller(lambda: 3600.0, changes.changed, changes.first)

    await poller.ensure_fresh()
    await poller.ensure_fresh()
    after_failure = reads.count
    poller.expire()
    await poller.ensure_fresh()

    assert after_failure == 1
    assert "Could not read the change counters" in caplog.messages
    assert (reads.count, changes.firsts) == (2, 1)


async def test_restarting_a_running_poll_applies_a_shorter_interval_at_once(monkeypatch) -> None:
    reads, changes = Reads(monkeypatch), Changes()
    interval = [3600.0]
    poller = Poller(lambda: interval[0], changes.changed, changes.first)
    poller.start()
    await asyncio.sleep(0)  # one turn of the loop: the poll begins its hour-long sleep
    try:
        interval[0] = 0.01
        poller.restart()  # without it, the poll would sleep out the hour it started with
        first, second = await reads.next(), await reads.next()
    finally:
        poller.stop()

    assert (first, second) == (1, 2)
    assert not poller.running


async def test_restarting_a_stopped_poll_leaves_it_stopped() -> None:
    changes = Changes()
    poller = Poller(lambda: 0.01, changes.changed, changes.first)
    poller.restart()

    assert not poller.running


async def test_the_hub_polls_at_the_short_interval_while_the_layer_is_lost_and_slowly_once_it_is_back(
    settings, monkeypatch
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "POLL_SECONDS": 0.02, "SAFETY_POLL_SECONDS": 3600}
    layer = Layer()
    monkeypatch.setattr(group, "channel_layer", lambda: layer)
    monkeypatch.setattr(group, "REJOIN_FIRST_SECONDS", 0.005)
    monkeypatch.setattr(group, "REJOIN_MAX_SECONDS", 0.02)
    hub, holder = Hub(), object()
    await hub.retain(holder)
    try:
        joined = hub.poll_interval()
        reads = Reads(monkeypatch)
        await layer.break_connection(failing_joins=1_000_000)
        first, second = await reads.next(), await reads.next()  # only the short interval reads this soon
        lost = hub.poll_interval()
        layer.failing_joins = 0
        await asyncio.wait_for(layer.joined.wait(), TIMEOUT)
        back = hub.poll_interval()
    finally:
        hub.release(holder)

    assert (joined, lost, back) == (3600, 0.02, 3600)
    assert (first, second) == (1, 2)
    assert hub.poller.running is False and hub.active is False

"""The change group's subscription: joined, heard, lost, and joined again after pauses that grow."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_tools.notify import group
from mcp_tools.notify.group import GroupSubscription, handlers_of, on_event, rejoin_pause
from tests.notify_fakes import Layer
from tests.websocket import TIMEOUT

CHANGE = {"type": "mcp.tools_changed", "stamp": "one"}


class Owner:
    """What a subscription calls back, recorded; ``failing`` events raise when delivered."""

    def __init__(self, subscription: GroupSubscription | None = None, failing: int = 0) -> None:
        self.subscription = subscription
        self.failing = failing
        self.delivered: list[dict[str, Any]] = []
        self.heard = asyncio.Event()
        self.joins = 0
        self.hearing: list[bool] = []  # hears_others at each hearing_changed()
        self.missed_count = 0
        self.missed_event = asyncio.Event()

    async def deliver(self, event: dict[str, Any]) -> None:
        if self.failing:
            self.failing -= 1
            raise RuntimeError("could not act on the event")
        self.delivered.append(event)
        self.heard.set()

    def joined(self) -> None:
        self.joins += 1

    def hearing_changed(self) -> None:
        assert self.subscription is not None
        self.hearing.append(self.subscription.hears_others)

    async def missed(self) -> None:
        self.missed_count += 1
        self.missed_event.set()


def subscribe(owner: Owner) -> GroupSubscription:
    subscription = GroupSubscription(owner.deliver, owner.joined, owner.hearing_changed, owner.missed)
    owner.subscription = subscription
    return subscription


@pytest.fixture
def layer(monkeypatch: pytest.MonkeyPatch) -> Layer:
    found = Layer()
    monkeypatch.setattr(group, "channel_layer", lambda: found)
    # Short pauses, still doubling: 0.01, 0.02, 0.04 ... at most 0.16 s.
    monkeypatch.setattr(group, "REJOIN_FIRST_SECONDS", 0.005)
    monkeypatch.setattr(group, "REJOIN_MAX_SECONDS", 0.16)
    return found


def test_the_pause_before_joining_again_doubles_with_each_failure_up_to_its_cap() -> None:
    assert [rejoin_pause(failures) for failures in range(1, 8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]


async def test_a_joined_subscription_hears_other_processes_and_hands_on_their_events(layer: Layer) -> None:
    owner = Owner()
    subscription = subscribe(owner)
    await subscription.join()
    try:
        hears = subscription.hears_others
        await layer.send_event(CHANGE)
        await asyncio.wait_for(owner.heard.wait(), TIMEOUT)
    finally:
        subscription.leave()

    assert hears
    assert owner.delivered == [CHANGE]
    assert (owner.joins, owner.hearing, owner.missed_count) == (1, [], 0)


async def test_a_layer_down_at_the_start_lets_sessions_open_and_is_joined_after_pauses_that_double(
    layer: Layer,
) -> None:
    layer.failing_joins = 4
    owner = Owner()
    subscription = subscribe(owner)
    await subscription.join()  # returns after the first failed attempt: the counters stand in meanwhile
    try:
        at_once = (len(layer.attempts), subscription.hears_others, owner.joins)
        await asyncio.wait_for(layer.joined.wait(), TIMEOUT)
        await asyncio.wait_for(owner.missed_event.wait(), TIMEOUT)
        hears_after = subscription.hears_others
    finally:
        subscription.leave()

    assert at_once == (1, False, 0)
    pauses = [later - earlier for earlier, later in zip(layer.attempts, layer.attempts[1:], strict=False)]
    expected = [0.01, 0.02, 0.04, 0.08]
    assert len(pauses) == len(expected)
    assert all(pause >= wanted * 0.9 for pause, wanted in zip(pauses, expected, strict=True)), pauses
    assert hears_after
    assert (owner.joins, owner.hearing, owner.missed_count) == (1, [False, True], 1)


async def test_a_lost_connection_is_joined_again_and_later_events_are_heard(layer: Layer) -> None:
    owner = Owner()
    subscription = subscribe(owner)
    await subscription.join()
    try:
        await layer.break_connection(failing_joins=2)
        await asyncio.wait_for(owner.missed_event.wait(), TIMEOUT)
        await layer.send_event(CHANGE)
        await asyncio.wait_for(owner.heard.wait(), TIMEOUT)
        hears_after = subscription.hears_others
    finally:
        subscription.leave()

    assert owner.hearing == [False, True]
    assert hears_after
    assert owner.delivered == [CHANGE]
    assert layer.members() == 1  # one member: the channel joined again, not a second one


async def test_an_event_that_cannot_be_acted_on_is_logged_and_later_events_are_heard(
    layer: Layer, caplog: pytest.LogCaptureFixture
) -> None:
    owner = Owner(failing=1)
    subscription = subscribe(owner)
    await subscription.join()
    try:
        await layer.send_event({"type": "mcp.tools_changed", "stamp": "lost"})
        await layer.send_event(CHANGE)
        await asyncio.wait_for(owner.heard.wait(), TIMEOUT)
    finally:
        subscription.leave()

    assert owner.delivered == [CHANGE]
    assert "Could not act on a tool change event" in caplog.messages


async def test_leaving_cancels_the_subscription_and_leaves_the_group(layer: Layer) -> None:
    owner = Owner()
    subscription = subscribe(owner)
    await subscription.join()
    members_joined = layer.members()
    subscription.leave()
    await asyncio.wait_for(layer.discarded.wait(), TIMEOUT)

    assert members_joined == 1
    assert layer.members() == 0
    assert not subscription.active and not subscription.hears_others


async def test_without_a_channel_layer_joining_returns_at_once_and_hears_nobody(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(group, "channel_layer", lambda: None)
    subscription = subscribe(Owner())
    await subscription.join()

    assert not subscription.active and not subscription.hears_others


def test_a_handler_registered_twice_for_an_event_type_runs_once_and_in_the_order_registered() -> None:
    def first(event: dict[str, Any]) -> None: ...

    def second(event: dict[str, Any]) -> None: ...

    on_event("test.registered_twice")(first)
    on_event("test.registered_twice")(second)
    on_event("test.registered_twice")(first)

    assert handlers_of("test.registered_twice") == [first, second]
    assert handlers_of("test.never_registered") == []

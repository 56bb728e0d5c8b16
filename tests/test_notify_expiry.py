"""Credential-expiry timers: a listener ends when its token expires, and a removed one is never ended."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from mcp_tools.access.credentials import TOKEN_EXPIRED
from mcp_tools.notify import expiry
from mcp_tools.notify.expiry import ExpiryTimers
from mcp_tools.notify.hub import Hub
from mcp_tools.notify.listeners import Listener as Watched
from mcp_tools.notify.listeners import Listeners
from tests.notify_fakes import Listener, Token
from tests.websocket import TIMEOUT


class Ended:
    def __init__(self) -> None:
        self.calls: list[tuple[Watched, str]] = []

    def __call__(self, listener: Watched, reason: str) -> None:
        self.calls.append((listener, reason))
        listener.end(reason)


def expiring(seconds: float) -> Listener:
    return Listener(token=Token(1, timezone.now() + timedelta(seconds=seconds)))


def registered(*listeners: Listener) -> tuple[Listeners, ExpiryTimers, Ended]:
    registry, ended = Listeners(), Ended()
    registry.members.update(listeners)
    return registry, ExpiryTimers(registry, ended), ended


async def test_a_listener_is_ended_once_its_token_expires() -> None:
    listener = expiring(0.05)
    _registry, timers, ended = registered(listener)
    timers.watch(listener)
    await asyncio.wait_for(listener.ended_event.wait(), TIMEOUT)

    assert ended.calls == [(listener, TOKEN_EXPIRED)]
    assert listener.token.is_expired
    assert len(timers) == 0


async def test_a_cancelled_timer_never_ends_its_listener() -> None:
    cancelled, witness = expiring(0.02), expiring(0.05)
    _registry, timers, ended = registered(cancelled, witness)
    timers.watch(cancelled)
    timers.watch(witness)
    timers.cancel(cancelled)
    await asyncio.wait_for(witness.ended_event.wait(), TIMEOUT)  # due after the cancelled one was

    assert ended.calls == [(witness, TOKEN_EXPIRED)]
    assert cancelled.reasons == []


async def test_a_timer_that_fires_before_a_far_expiry_is_armed_again_for_the_rest(monkeypatch) -> None:
    monkeypatch.setattr(expiry, "MAX_TIMER_SECONDS", 0.01)  # as a clock step would: the timer fires early
    listener = expiring(0.08)
    _registry, timers, ended = registered(listener)
    timers.watch(listener)
    rearmed = len(timers)
    await asyncio.wait_for(listener.ended_event.wait(), TIMEOUT)

    assert rearmed == 1
    assert ended.calls == [(listener, TOKEN_EXPIRED)]
    assert listener.token.is_expired  # not ended at the first, early, firing


async def test_no_timer_is_armed_for_a_token_that_never_expires_or_a_listener_not_registered() -> None:
    lasting, stranger = Listener(token=Token(1)), expiring(0.01)
    _registry, timers, _ended = registered(lasting)
    timers.watch(lasting)
    timers.watch(stranger)

    assert len(timers) == 0


@pytest.mark.django_db(transaction=True)
async def test_removing_a_listener_from_the_hub_cancels_its_expiry_timer() -> None:
    hub, removed, witness = Hub(), expiring(0.05), expiring(0.1)
    await hub.add(removed)
    await hub.add(witness)
    armed = len(hub.expiry)
    hub.remove(removed)
    after_remove = len(hub.expiry)
    await asyncio.wait_for(witness.ended_event.wait(), TIMEOUT)

    assert (armed, after_remove) == (2, 1)
    assert removed.reasons == []
    assert witness.reasons == [TOKEN_EXPIRED]
    assert hub.listeners == set() and not hub.active

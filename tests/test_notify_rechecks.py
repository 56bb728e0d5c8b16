"""What a change makes the hub re-check: the users and credentials of its listeners, ended when they stop
working; and the registry that counts each user's connections."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from mcp_tools.access import credentials, permissions
from mcp_tools.access.credentials import TOKEN_EXPIRED, TOKEN_REVOKED, USER_INACTIVE, Row
from mcp_tools.access.reach import Reach
from mcp_tools.notify import counters
from mcp_tools.notify.events import ACCESS_EVENT
from mcp_tools.notify.expiry import ExpiryTimers
from mcp_tools.notify.listeners import Listener as Watched
from mcp_tools.notify.listeners import Listeners
from mcp_tools.notify.rechecks import Rechecks
from tests.db import db_call
from tests.notify_fakes import Listener, Token

pytestmark = pytest.mark.django_db(transaction=True)

KIND = "test.recheck"


class Kind(Token):
    credential_kind = KIND


def rechecks_of(*listeners: Listener) -> tuple[Rechecks, ExpiryTimers, list[tuple[Watched, str]]]:
    registry, ended = Listeners(), []
    registry.members.update(listeners)

    def end(listener: Watched, reason: str) -> None:
        ended.append((listener, reason))
        registry.members.discard(listener)

    timers = ExpiryTimers(registry, end)
    return Rechecks(registry, end, timers), timers, ended


@pytest.fixture
def users(django_user_model: Any) -> dict[str, Any]:
    return {name: django_user_model.objects.create_user(name, password="pw") for name in ("kept", "gone", "off")}


async def test_a_recheck_of_users_ends_the_deleted_and_the_deactivated_and_refreshes_the_others(
    users: dict[str, Any],
) -> None:
    kept, gone, off = (Listener(user=users[name]) for name in ("kept", "gone", "off"))
    anonymous = Listener(user=AnonymousUser())
    rechecks, _timers, ended = rechecks_of(kept, gone, off, anonymous)
    users["kept"].first_name = "stale"
    await db_call(type(users["gone"]).objects.filter(username="gone").delete)
    await db_call(type(users["off"]).objects.filter(username="off").update, is_active=False)

    await rechecks.recheck_users(None)

    assert sorted(ended, key=lambda pair: pair[0].user.username) == [(gone, USER_INACTIVE), (off, USER_INACTIVE)]
    assert kept.user is not users["kept"] and kept.user.first_name == ""
    assert anonymous.reasons == []


async def test_a_recheck_of_some_users_leaves_the_others_alone(users: dict[str, Any]) -> None:
    gone, other = Listener(user=users["gone"]), Listener(user=users["off"])
    rechecks, _timers, ended = rechecks_of(gone, other)
    named = users["gone"].pk
    await db_call(type(users["gone"]).objects.filter(username__in=["gone", "off"]).delete)

    await rechecks.recheck_users({named})

    assert ended == [(gone, USER_INACTIVE)]


async def test_a_recheck_of_credentials_ends_the_revoked_the_reassigned_and_the_expired(
    users: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    later = timezone.now() + timedelta(hours=1)
    past = timezone.now() - timedelta(seconds=1)
    user, other = users["kept"], users["gone"]
    rows = {1: Row(user.pk, later), 2: Row(other.pk, None), 3: Row(user.pk, past), 5: Row(user.pk, later)}
    monkeypatch.setitem(credentials._loaders, KIND, lambda ids: {pk: rows[pk] for pk in ids if pk in rows})
    working, reassigned, expired, revoked = (Listener(user, Kind(pk)) for pk in (1, 2, 3, 4))
    untouched = Listener(user, Kind(5))
    rechecks, timers, ended = rechecks_of(working, reassigned, expired, revoked, untouched)

    await rechecks.recheck_tokens({(KIND, 1), (KIND, 2), (KIND, 3), (KIND, 4)})

    assert sorted((listener.token.pk, reason) for listener, reason in ended) == [
        (2, TOKEN_REVOKED),
        (3, TOKEN_EXPIRED),
        (4, TOKEN_REVOKED),
    ]
    assert working.token.expires_at == later
    assert len(timers) == 1  # the working credential's new expiry is timed; the untouched one was not read
    assert untouched.token.expires_at is None
    timers.cancel(working)


async def test_a_credential_narrowed_elsewhere_tells_its_holders_their_list_may_have_changed(
    users: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    narrower = Reach(read_only=True)
    user = users["kept"]
    monkeypatch.setitem(credentials._loaders, KIND, lambda ids: {pk: Row(user.pk, None, narrower) for pk in ids})
    shared = Kind(1)
    first, second = Listener(user, shared), Listener(user, shared)
    rechecks, _timers, ended = rechecks_of(first, second)

    await rechecks.recheck_tokens(None)

    assert ended == []
    assert shared.reach == narrower
    assert (len(first.told), len(second.told)) == (1, 1)


async def test_an_event_of_another_type_is_left_to_its_handlers() -> None:
    rechecks, _timers, _ended = rechecks_of()

    assert await rechecks.act_on({"type": "mcp.session_ended", "id": "x"}) is False


async def test_a_listener_that_fails_to_take_the_news_does_not_keep_it_from_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Failing(Listener):
        def tools_changed(self, snapshot: Any) -> None:
            raise RuntimeError("the transport is gone")

    failing, told = Failing(), Listener()
    rechecks, _timers, _ended = rechecks_of(failing, told)

    await rechecks.announce()

    assert len(told.told) == 1
    assert "A session failed to take a list_changed notification" in caplog.messages


def test_each_user_has_a_connection_allowance_and_anonymous_callers_share_one(settings, users) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CONNECTIONS_PER_USER": 2}
    registry = Listeners()
    registry.members.update({Listener(users["kept"]), Listener(users["kept"]), Listener(AnonymousUser())})

    assert not registry.admits(users["kept"])
    assert registry.admits(users["gone"])
    assert registry.admits(AnonymousUser())
    registry.members.add(Listener(AnonymousUser()))
    assert not registry.admits(AnonymousUser())


def test_the_registry_is_idle_only_without_listeners_and_holders() -> None:
    registry = Listeners()
    idle_when_empty = registry.idle
    registry.holders.add(object())

    assert idle_when_empty and not registry.idle


async def test_a_poll_that_read_a_user_before_a_change_cannot_undo_the_change_s_own_recheck(
    users: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = users["kept"], await db_call(type(users["kept"]).objects.get, username="kept")
    before.first_name, after.first_name = "before", "after"
    listener = Listener(user=before)
    rechecks, _timers, _ended = rechecks_of(listener)
    polled, let_poll_finish = asyncio.Event(), asyncio.Event()
    reads: list[Any] = [before, after]

    async def reload(callers: Any) -> dict[Any, Any]:
        read = reads.pop(0)
        if read is before:  # the poll's read, made before the change: held until the change's event has come
            polled.set()
            await let_poll_finish.wait()
        return {read.pk: read}

    monkeypatch.setattr(permissions, "reload", reload)
    poll = asyncio.ensure_future(rechecks.refresh({counters.ACCESS}))
    await asyncio.wait_for(polled.wait(), 10)
    event = asyncio.ensure_future(rechecks.act_on({"type": ACCESS_EVENT, "users": [after.pk]}))
    await asyncio.sleep(0)  # one turn of the loop, not a wait: the event's re-check starts if it may
    let_poll_finish.set()
    await asyncio.wait_for(asyncio.gather(poll, event), 10)

    assert listener.user is after
    assert reads == []

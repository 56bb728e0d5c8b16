"""notifications/tools/list_changed: one per committed change, to every initialized session."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction
from django.test import Client

from mcp_tools.models import Tool
from mcp_tools.notify.events import ACCESS_EVENT, group_name
from mcp_tools.tools.registry import registry
from tests.db import db_call
from tests.websocket import TIMEOUT, WSClient, heard_once, listed, pong, ws_headers

pytestmark = pytest.mark.django_db(transaction=True)

REGISTERED = [registered.key for registered in registry.all()]


def create_tool() -> None:
    Tool.objects.create(name="add_again", title="Add again", callable_name="add", everyone=True)


def edit_tool() -> None:
    tool = Tool.objects.get(name="greet")
    tool.title = "Say hello"
    tool.save()


def disable_tool() -> None:
    tool = Tool.objects.get(name="greet")
    tool.enabled = False
    tool.save()


def delete_tool() -> None:
    Tool.objects.get(name="greet").delete()


def admin_client() -> Client:
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(admin)
    return client


def admin_action(action: str, names: list[str]) -> None:
    pks = [str(pk) for pk in Tool.objects.filter(name__in=names).values_list("pk", flat=True)]
    response = admin_client().post("/admin/mcp_tools/tool/", {"action": action, "_selected_action": pks})
    assert response.status_code == 302


def admin_disable_two() -> None:
    admin_action("disable_tools", ["greet", "tags"])


def disable_two_unannounced() -> None:
    Tool.objects.filter(name__in=["greet", "tags"]).update(enabled=False)


def admin_enable_two() -> None:
    admin_action("enable_tools", ["greet", "tags"])


def admin_delete_one() -> None:
    pk = Tool.objects.get(name="greet").pk
    response = admin_client().post(f"/admin/mcp_tools/tool/{pk}/delete/", {"post": "yes"})
    assert response.status_code == 302


def names(tools: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(tools)


def registered_except(*excluded: str) -> list[str]:
    return [key for key in REGISTERED if key not in excluded]


CHANGES: list[tuple[Callable[[], None], Callable[[dict[str, Any]], Any], Any]] = [
    (create_tool, lambda tools: tools["add_again"]["title"], "Add again"),
    (edit_tool, lambda tools: tools["greet"]["title"], "Say hello"),
    (disable_tool, names, registered_except("greet")),
    (delete_tool, names, registered_except("greet")),
    (admin_disable_two, names, registered_except("greet", "tags")),
    (admin_enable_two, names, REGISTERED),
    (admin_delete_one, names, registered_except("greet")),
]


# What must hold before the sessions connect, for a change that undoes it.
BEFORE: dict[Callable[[], None], Callable[[], None]] = {admin_enable_two: disable_two_unannounced}


@pytest.mark.parametrize(("change", "view", "expected"), CHANGES, ids=[change.__name__ for change, _, _ in CHANGES])
async def test_a_committed_change_notifies_every_initialized_session_once(ws_session, change, view, expected):
    if change in BEFORE:
        await db_call(BEFORE[change])
    first, second = await ws_session(), await ws_session()

    await db_call(change)

    assert view(await heard_once(first)) == expected
    assert view(await heard_once(second)) == expected


async def test_a_rolled_back_change_sends_nothing(ws_session):
    client = await ws_session()

    def create_then_roll_back() -> None:
        try:
            with transaction.atomic():
                Tool.objects.create(name="ghost", callable_name="add")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass

    await db_call(create_then_roll_back)
    await db_call(disable_tool)

    tools = await heard_once(client)
    assert ("ghost" in tools, "greet" in tools) == (False, False)


async def test_several_saves_in_one_transaction_send_one_notification(ws_session):
    client = await ws_session()

    def disable_three() -> None:
        with transaction.atomic():
            for tool in Tool.objects.filter(name__in=["add", "greet", "tags"]):
                tool.enabled = False
                tool.save()
            Tool.objects.get(name="crash").delete()

    await db_call(disable_three)

    assert sorted(set(REGISTERED) - set(await heard_once(client))) == ["add", "crash", "greet", "tags"]


async def test_a_session_that_has_not_initialized_hears_nothing(ws_session):
    initialized = await ws_session()
    fresh = await ws_session(initialize=False)

    await db_call(disable_tool)
    await heard_once(initialized)

    assert await pong(fresh) == {"jsonrpc": "2.0", "id": "ping", "result": {}}


async def test_without_a_channel_layer_list_changed_is_advertised_and_told_by_polling(
    ws_connect, token, tools, settings
):
    settings.CHANNEL_LAYERS = {}
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "POLL_SECONDS": 0.05}
    communicator, accepted, _ = await ws_connect(ws_headers(token))
    assert accepted
    client = WSClient(communicator)
    init = await client.initialize()

    await db_call(disable_tool)

    assert init["result"]["capabilities"] == {"tools": {"listChanged": True}}
    assert "greet" not in await heard_once(client)


async def test_without_a_channel_layer_the_next_tools_list_shows_a_change_at_once(ws_connect, token, tools, settings):
    settings.CHANNEL_LAYERS = {}
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "POLL_SECONDS": 3600}
    communicator, accepted, _ = await ws_connect(ws_headers(token))
    assert accepted
    client = WSClient(communicator)
    await client.initialize()
    assert "greet" in await listed(client)

    await db_call(disable_tool)

    assert "greet" not in await listed(client)
    assert await pong(client) == {"jsonrpc": "2.0", "id": "ping", "result": {}}


async def test_sessions_hear_changes_on_the_configured_channel_layer_alias(ws_session, settings):
    settings.CHANNEL_LAYERS = {
        **settings.CHANNEL_LAYERS,
        "events": {"BACKEND": "channels.layers.InMemoryChannelLayer"},
    }
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CHANNEL_LAYER": "events"}
    client = await ws_session()

    await db_call(disable_tool)

    assert "greet" not in await heard_once(client)


@pytest.mark.parametrize("in_transaction", [False, True], ids=["autocommit", "atomic"])
async def test_a_saved_user_is_named_in_the_access_event_with_or_without_a_transaction(
    in_transaction: bool, django_user_model: Any
) -> None:
    # Autocommit is how ``manage.py shell`` and most workers save: Django runs on-commit work at once there.
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group_name(), channel)
    user = await db_call(django_user_model.objects.create_user, "erin")

    def deactivate() -> None:
        user.is_active = False
        with transaction.atomic() if in_transaction else contextlib.nullcontext():
            user.save()

    await db_call(deactivate)

    event = await asyncio.wait_for(layer.receive(channel), TIMEOUT)
    assert event == {"type": ACCESS_EVENT, "users": [user.pk]}
    await layer.group_discard(group_name(), channel)


class ReadTimeoutOnCancelLayer(InMemoryChannelLayer):
    """Reports the first cancellation of a receive as a read timeout, as channels_redis on redis-py can."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.timed_out = False

    async def receive(self, channel: str) -> dict[str, Any]:
        try:
            return await super().receive(channel)
        except asyncio.CancelledError:
            if self.timed_out:
                raise
            self.timed_out = True
            raise TimeoutError("Timeout reading from 127.0.0.1:6379") from None


async def test_the_last_session_leaving_stops_the_group_listener_even_if_its_read_times_out_as_it_stops(
    ws_session, settings
):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.ReadTimeoutOnCancelLayer"}}
    layer = get_channel_layer()
    client = await ws_session()
    [listening] = [task for task in asyncio.all_tasks() if task.get_coro().__qualname__ == "GroupSubscription._run"]

    await client.communicator.disconnect(timeout=TIMEOUT)

    done, _pending = await asyncio.wait({listening}, timeout=TIMEOUT)
    assert (layer.timed_out, done) == (True, {listening})

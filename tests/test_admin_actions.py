"""Admin-action tools: the site's own ModelAdmin actions, run on the rows a call selects as the admin runs them.

The table test runs each action twice from the same starting rows, once as a tool call and once from the
admin's changelist in a test client, as the same user, and compares the rows changed and the messages.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import messages as django_messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.test import Client
from django.test.client import RequestFactory

from mcp_tools.models import Tool, ToolCall
from mcp_tools.tools.executors.admin_actions import messages
from mcp_tools.tools.executors.admin_actions.offered import offered
from mcp_tools.tools.kinds.checks import check_admin_site
from tests.db import orm
from tests.live import query_data
from tests.live.query_data import grant
from tests.queries import failed
from tests.testapp.admin import PUBLISHERS
from tests.testapp.models import Item
from tests.wire import connected, listed

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = "/backoffice/testapp/item/"
ACTIONS = ("activate", "release", "retire")
# user -> (permissions, groups, superuser)
PEOPLE: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    "alice": (("testapp.view_item", "testapp.change_item"), (), False),
    "bob": (("testapp.view_item",), (), False),
    "carol": (("testapp.view_item", "testapp.change_item"), (PUBLISHERS,), False),
    "dave": ((), (), False),
    "root": ((), (), True),
}


def make_tool(action: str, **config: Any) -> Tool:
    tool = Tool(
        name=f"item_{action}",
        kind=Tool.Kind.ADMIN_ACTION,
        everyone=True,
        confirmation=Tool.Confirmation.NONE,  # confirmed calls: tests/test_confirmations.py
        config={"action": f"testapp.item:{action}", "filters": ["id__in", "name__icontains"], **config},
    )
    tool.full_clean()
    tool.save()
    return tool


def seed() -> dict[str, Any]:
    users = query_data.seed()
    model = get_user_model()
    people: dict[str, Any] = {}
    for name, (permissions, groups, superuser) in PEOPLE.items():
        user = users.get(name) or model.objects.create_user(name, password=name)
        user.is_staff, user.is_superuser = True, superuser
        user.set_password(name)
        user.save()
        for group in groups:
            user.groups.add(Group.objects.get_or_create(name=group)[0])
        people[name] = grant(user, *permissions)
    for action in ACTIONS:
        make_tool(action)
    return people


@pytest.fixture
async def people() -> dict[str, Any]:
    return await orm(seed)


def state() -> dict[int, tuple[str, bool]]:
    return {pk: (status, active) for pk, status, active in Item.objects.values_list("pk", "status", "active")}


def restore(saved: dict[int, tuple[str, bool]]) -> None:
    for pk, (status, active) in saved.items():
        Item.objects.filter(pk=pk).update(status=status, active=active)


def selection() -> list[int]:
    # Items of several accounts (alice manages some, bob and carol others), drafts and not.
    return sorted(Item.objects.order_by("pk").values_list("pk", flat=True)[:12])


def changed(before: dict[int, Any], after: dict[int, Any]) -> dict[int, Any]:
    return {pk: after[pk] for pk in before if before[pk] != after[pk]}


def through_admin(username: str, action: str, ids: list[int]) -> list[dict[str, str]] | None:
    """Run ``action`` from the changelist as ``username``; its messages, or None when the admin did not run it."""
    client = Client()
    assert client.login(username=username, password=username)
    offered_choices = client.get(CHANGELIST)
    if offered_choices.status_code != 200 or f'value="{action}"' not in offered_choices.content.decode():
        return None
    response = client.post(CHANGELIST, {"action": action, "_selected_action": ids, "index": 0}, follow=True)
    assert response.status_code == 200
    return [
        {"level": messages.LEVELS.get(m.level, "error"), "message": str(m.message)}
        for m in response.context["messages"]
    ]


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("username", sorted(PEOPLE))
async def test_a_tool_call_changes_what_the_admin_changes_for_the_same_user(people, username, action):
    ids = await orm(selection)
    before = await orm(state)

    wire = await connected(people[username])
    visible = action in {name.removeprefix("item_") for name in await listed(wire)}
    reply = await wire.request("tools/call", {"name": f"item_{action}", "arguments": {"id__in": ids}})
    by_tool = changed(before, await orm(state))
    result = reply.get("result", {})
    tool_messages = result.get("structuredContent", {}).get("messages") if not result.get("isError") else None

    await orm(restore, before)
    admin_messages = await orm(through_admin, username, action, ids)
    by_admin = changed(before, await orm(state))

    assert by_tool == by_admin
    if admin_messages is None:
        # The admin does not offer the action to this user: the tool runs nothing, and says no more than
        # "unknown tool" when its up-front permission is missing.
        assert tool_messages is None and by_tool == {}
        assert not visible or "may not run" in failed(reply)
    else:
        assert visible and tool_messages == admin_messages
        assert result["content"][0]["text"] == "\n".join(m["message"] for m in admin_messages)


async def test_the_modeladmins_queryset_narrows_what_a_call_reaches(people):
    # alice manages some accounts only: the ModelAdmin shows her their items, and the tool acts on no other.
    ids = await orm(selection)
    before = await orm(state)
    wire = await connected(people["alice"])
    await wire.request("tools/call", {"name": "item_activate", "arguments": {"id__in": ids}})
    touched = changed(before, await orm(state))
    mine = set(
        await orm(lambda: list(Item.objects.filter(account__manager__username="alice").values_list("pk", flat=True)))
    )
    assert touched and set(touched) <= mine


async def test_a_selection_over_the_row_cap_changes_nothing(people):
    await orm(lambda: Tool.objects.filter(name="item_activate").delete())
    await orm(lambda: make_tool("activate", max_rows=2))
    before = await orm(state)
    wire = await connected(people["root"])
    reply = await wire.request("tools/call", {"name": "item_activate", "arguments": {"id__in": (await orm(selection))}})
    assert "at most 2 per call" in failed(reply) and "Nothing was changed" in failed(reply)
    assert await orm(state) == before
    assert await orm(lambda: ToolCall.objects.filter(tool_name="item_activate").count()) == 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"api_key__exact": "x"},  # a field the tool does not allow
        {"status__regex": ".*"},  # a lookup no filter allows
        {"id__in": list(range(1000))},  # more values than a list may hold
    ],
)
async def test_hostile_selections_are_refused_before_any_row_is_touched(people, arguments):
    before = await orm(state)
    wire = await connected(people["root"])
    reply = await wire.request("tools/call", {"name": "item_activate", "arguments": arguments})
    text = failed(reply) if "result" in reply else reply["error"]["message"]
    assert text
    assert await orm(state) == before


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"action": "testapp.item:delete_selected"}, "asks for confirmation on a page of its own"),
        ({"action": "testapp.item:price_sheet"}, "may answer with a page of its own"),
        ({"action": "testapp.item:no_such_action"}, "offers no action"),
        ({"action": "testapp.item:activate", "filters": ["api_key__exact"]}, "api_key"),
        ({"action": "testapp.item:activate", "filters": ["account__api_key__exact"]}, "api_key"),
        ({"action": "testapp.item:activate", "filters": ["name__regex"]}, "lookups"),
        ({"action": "testapp.item:activate", "max_rows": 10**6}, "max_rows"),
        ({"action": "testapp.item:activate", "extra": 1}, "Unknown configuration key"),
    ],
)
def test_a_configuration_that_cannot_run_is_refused_with_the_reason(config, problem):
    tool = Tool(name="bad", kind=Tool.Kind.ADMIN_ACTION, config=config)
    with pytest.raises(ValidationError) as caught:
        tool.full_clean()
    assert problem in " ".join(caught.value.messages)


def test_the_offered_actions_mark_those_that_need_a_page():
    found = offered()
    assert found["testapp.item:activate"].usable
    assert found["testapp.item:release"].usable and found["testapp.item:release"].allowed_permissions == ("publish",)
    assert not found["testapp.item:delete_selected"].usable
    assert not found["testapp.item:price_sheet"].usable
    assert "not usable" in found["testapp.item:price_sheet"].label


def test_the_admins_tool_form_offers_the_actions_and_saves_the_configuration(admin_client):
    page = admin_client.get("/admin/mcp_tools/tool/add/").content.decode()
    assert 'value="testapp.item:activate"' in page and "Print a price sheet" in page
    response = admin_client.post(
        "/admin/mcp_tools/tool/add/",
        {
            "name": "activate_items",
            "kind": "admin_action",
            "enabled": "on",
            "admin_action-action": "testapp.item:activate",
            "admin_action-filters": "id__in\nstatus__exact",
            "admin_action-max_rows": "5",
            **empty_inlines(),
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    tool = Tool.objects.get(name="activate_items")
    assert tool.config == {"action": "testapp.item:activate", "filters": ["id__in", "status__exact"], "max_rows": 5}
    assert set(tool.input_schema["properties"]) == {"id__in", "status"}
    assert tool.description == "Activate selected items"


def empty_inlines() -> dict[str, str]:
    fields: dict[str, str] = {}
    for prefix in ("query", "sources", "user_grants", "group_grants"):
        fields |= {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}
    return fields


def test_the_admins_messages_are_collected_through_djangos_own_api():
    # Pins the adapter: Django reads a request's message storage from request._messages.
    request = RequestFactory().post("/")
    storage = messages.collect(request)
    django_messages.success(request, "Done.")
    django_messages.warning(request, "Careful.")
    assert django_messages.get_messages(request) is storage
    assert messages.shown(storage) == [
        {"level": "success", "message": "Done."},
        {"level": "warning", "message": "Careful."},
    ]


def test_the_admin_tries_an_action_tool_as_a_user_and_sees_the_admins_messages():
    people = seed()
    ids = selection()
    before = state()
    client = Client()
    client.force_login(people["root"])
    tool = Tool.objects.get(name="item_activate")
    page = client.post(f"/admin/mcp_tools/tool/{tool.pk}/try/", {"user": "alice", "arg_id__in": str(ids)})

    touched = changed(before, state())
    mine = set(Item.objects.filter(account__manager__username="alice").values_list("pk", flat=True))
    assert touched and set(touched) <= mine
    assert f"{len(mine & set(ids))} item(s) activated." in page.content.decode()
    assert list(ToolCall.objects.values_list("tool_name", "transport", "outcome")) == [("item_activate", "admin", "ok")]


@pytest.mark.parametrize("value", ["no.such.site", "django.contrib.admin.ModelAdmin"])
def test_a_setting_that_names_no_admin_site_is_an_error_and_the_tool_page_still_opens(settings, admin_client, value):
    settings.MCP_TOOLS = {"ADMIN_SITE": value}
    assert [m.id for m in check_admin_site()] == ["mcp_tools.E015"]
    assert admin_client.get("/admin/mcp_tools/tool/add/").status_code == 200

"""Titles and hints: derived from what a tool does when unset, overridden by the admin, shown in tools/list."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.models import Tool
from mcp_tools.tools import hints
from tests.admin_forms import tool_form
from tests.db import orm
from tests.queries import seed_users
from tests.wire import connected, listed

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS_URL = "/admin/mcp_tools/tool/"
READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
CREATE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
CHANGE = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}


async def test_model_query_tools_list_the_hints_of_their_operation_and_a_title_from_their_name() -> None:
    people = await orm(seed_users)
    wire = await connected(people["alice"])

    tools = await listed(wire)

    shown = {name: tools[name]["annotations"] for name in ("items", "item_create", "item_update", "item_delete")}
    assert shown == {
        "items": {"title": "Items", **READ},
        "item_create": {"title": "Item create", **CREATE},
        "item_update": {"title": "Item update", **CHANGE},
        "item_delete": {"title": "Item delete", **CHANGE},
    }


async def test_a_hint_set_in_the_row_overrides_the_derived_one() -> None:
    def override() -> Any:
        people = seed_users()
        Tool.objects.filter(name="item_delete").update(destructive_hint=False, title="Archive an item")
        return people["alice"]

    wire = await connected(await orm(override))

    tool = (await listed(wire))["item_delete"]
    assert (tool["title"], tool["annotations"]) == (
        "Archive an item",
        {"title": "Archive an item", **CHANGE, "destructiveHint": False},
    )


def test_a_callable_derives_no_hint() -> None:
    assert hints.derived(Tool(name="x", kind=Tool.Kind.CALLABLE, callable_name="add")) == {}


@pytest.mark.parametrize(("name", "title"), [("list_orders", "List orders"), ("shop.find-it", "Shop find it")])
def test_a_blank_title_reads_as_the_humanised_name(name: str, title: str) -> None:
    assert hints.title(Tool(name=name)) == title


def test_the_admin_shows_each_hints_derived_value_and_saves_an_override(admin_client: Any) -> None:
    seed_users()
    tool = Tool.objects.get(name="item_update")

    response = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/")

    form = response.context["adminform"].form
    choices = {name: dict(form.fields[name].widget.choices)["unknown"] for name in hints_fields()}
    assert choices == {
        "read_only_hint": "Derived: No",
        "destructive_hint": "Derived: Yes",
        "idempotent_hint": "Derived: Yes",
        "open_world_hint": "Derived: No",
    }
    assert form.fields["title"].help_text == "What people read. Blank: Item update"


def hints_fields() -> tuple[str, ...]:
    return ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")


def test_a_callable_tools_hints_say_none_is_derived(admin_client: Any) -> None:
    admin_client.post(f"{TOOLS_URL}add/", tool_form())
    tool = Tool.objects.get(name="adder")

    form = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/").context["adminform"].form

    assert dict(form.fields["read_only_hint"].widget.choices)["unknown"] == "Derived: not set"

"""A saved tool's admin page in a real headless Chromium, on the demo site: only the fields of its kind, its
sections in the order an owner reads them with the grants right after Access, schemas it derives shown as
such, and a save of the page as it came that leaves the tool as it was."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.live.browser_pages import tool_change_url
from tests.live.demo import manage
from tests.live.servers import ServerProcess

pytest_plugins = ["tests.live.fixtures", "tests.live.browser"]
pytestmark = pytest.mark.live

# The tool's row, its configuration and its grants, as JSON; ``updated_at`` alone may move on a save.
SNAPSHOT = """
import json
from django.forms.models import model_to_dict
from mcp_tools.models import ModelQuery, Tool
tool = Tool.objects.get(name=NAME)
query = ModelQuery.objects.filter(tool=tool).first()
print(json.dumps({
    "tool": {**model_to_dict(tool), "created_at": tool.created_at.isoformat()},
    "query": model_to_dict(query) if query else None,
    "users": sorted(tool.user_grants.values_list("user_id", flat=True)),
    "groups": sorted(tool.group_grants.values_list("group_id", flat=True)),
}, sort_keys=True, default=str))
"""
# Each top-level section of the change form (an inline's inner fieldsets are its own), by heading or inline id.
SECTIONS = """() => Array.from(document.querySelectorAll("#tool_form fieldset.module, #tool_form .inline-group"))
    .filter((el) => el.classList.contains("inline-group") || !el.closest(".inline-group"))
    .map((el) => el.classList.contains("inline-group") ? "#" + el.id : el.querySelector("h2")?.textContent.trim() ?? "")
"""
IDENTITY = ""
AFTER_GRANTS = ["Access", "#user_grants-group", "#group_grants-group", "Limits", "Schemas", "Annotations"]
CLOSING = ["What clients see", "History"]


def snapshot(env: dict[str, str], name: str) -> dict[str, Any]:
    script = SNAPSHOT.replace("NAME", json.dumps(name))
    return dict(json.loads(manage(env, "shell", "--no-imports", "-c", script).stdout))


def open_tool(page: Page, server: ServerProcess, name: str) -> None:
    page.goto(tool_change_url(page, server, name))
    expect(page.locator("#id_name")).to_have_value(name)


def open_saved(page: Page, server: ServerProcess, env: dict[str, str], name: str) -> dict[str, Any]:
    """The tool's snapshot, taken before its page is opened."""
    before = snapshot(env, name)
    open_tool(page, server, name)
    return before


def expect_kind_field(page: Page, shown: str | None) -> None:
    """Of the fields naming what a tool runs, only ``shown`` (or none) is on the page."""
    for field in ("callable_name", "api_action"):
        row = expect(page.locator(f".field-{field}"))
        if field == shown:
            row.to_be_visible()
        else:
            row.to_be_hidden()


def expect_layout(page: Page, kind_field: str | None, *configuration: str) -> None:
    """The sections in order, the kind's configuration right after what the tool runs, and the kind's field."""
    assert page.evaluate(SECTIONS) == [IDENTITY, "What it runs", *configuration, *AFTER_GRANTS, *CLOSING]
    expect_kind_field(page, kind_field)


def expect_kept_on_saving_unchanged(page: Page, env: dict[str, str], before: dict[str, Any]) -> None:
    page.click("input[name=_save]")
    expect(page.locator(".errornote")).to_have_count(0)
    expect(page.locator(".messagelist .success")).to_have_count(1)
    assert snapshot(env, before["tool"]["name"]) == before


def test_a_callable_tool_shows_its_callable_and_its_schemas_over_the_callables(
    admin_page: Page, demo_server: ServerProcess, demo_env: dict[str, str]
) -> None:
    page = admin_page
    before = open_saved(page, demo_server, demo_env, "order_summary")

    expect_layout(page, "callable_name")
    # Empty boxes, as their help says, each over the schema the tool uses.
    expect(page.locator("#id_input_schema")).to_have_value("")
    expect(page.locator("#id_output_schema")).to_have_value("")
    callable_input = page.locator(".field-callable_input_schema pre")
    expect(callable_input).to_be_visible()
    assert json.loads(callable_input.inner_text()) == before["tool"]["input_schema"]
    assert json.loads(page.locator(".field-callable_output_schema pre").inner_text()) == before["tool"]["output_schema"]

    expect_kept_on_saving_unchanged(page, demo_env, before)


def test_a_model_query_tool_shows_its_query_after_what_it_runs_and_generated_schemas_read_only(
    admin_page: Page, demo_server: ServerProcess, demo_env: dict[str, str]
) -> None:
    page = admin_page
    before = open_saved(page, demo_server, demo_env, "list_orders")

    expect_layout(page, None, "#query-group")
    expect(page.locator("#id_input_schema")).to_have_count(0)
    generated = page.locator(".field-generated_input_schema pre")
    expect(generated).to_be_visible()
    assert json.loads(generated.inner_text()) == before["tool"]["input_schema"]

    expect_kept_on_saving_unchanged(page, demo_env, before)


def test_an_api_action_tool_shows_its_action_and_its_grants_after_access(
    admin_page: Page, demo_server: ServerProcess, demo_env: dict[str, str]
) -> None:
    page = admin_page
    before = open_saved(page, demo_server, demo_env, "api_list_orders")
    assert len(before["groups"]) == 2

    expect_layout(page, "api_action")
    expect(page.locator("#id_api_action")).to_have_value(before["tool"]["api_action"])
    expect(page.locator("#group_grants-group tbody tr.has_original")).to_have_count(2)
    expect(page.locator("#id_input_schema")).to_have_count(0)

    expect_kept_on_saving_unchanged(page, demo_env, before)


def test_choosing_another_kind_shows_that_kinds_field_at_once(admin_page: Page, demo_server: ServerProcess) -> None:
    page = admin_page
    open_tool(page, demo_server, "add")

    page.select_option("#id_kind", "api_action")

    expect_kind_field(page, "api_action")

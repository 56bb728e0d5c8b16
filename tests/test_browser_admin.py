"""The admin and the landing page's live console in a real headless Chromium, on the demo site served by uvicorn."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.live.browser_pages import (
    ARTIFACTS_VARIABLE,
    TOOLS,
    WIDTH,
    log_in,
    mcp_request,
    report_pages,
    tool_change_url,
    tool_names,
)
from tests.live.servers import ServerProcess

pytest_plugins = ["tests.live.fixtures", "tests.live.browser"]
pytestmark = pytest.mark.live

# A seeded model-query tool that the demo grants to the group sales (alice) and support (bob).
SEEDED_TOOL = "find_customers"


def saved(page: Page) -> None:
    """The admin said the save worked (and showed no form errors)."""
    expect(page.locator(".errornote")).to_have_count(0)
    expect(page.locator(".messagelist .success").first).to_be_visible()


def run_tool_action(page: Page, server: ServerProcess, name: str, action: str) -> None:
    """Select the tool ``name`` in the changelist and run a changelist action on it."""
    page.goto(server.url(f"{TOOLS}?q={name}"))
    row = page.locator("#result_list tbody tr", has=page.locator("th a", has_text=name))
    expect(row).to_have_count(1)
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", action)
    page.click("button[name=index]")
    saved(page)


def test_the_admin_signs_a_superuser_in(page: Page, demo_server: ServerProcess) -> None:
    log_in(page, demo_server, "admin", "admin")

    expect(page.locator("#user-tools")).to_contain_text("Welcome, admin")
    expect(page.locator("#content-main a", has_text="Tools").first).to_be_visible()


def test_a_tool_made_in_the_admin_and_granted_to_a_group_is_listed_to_that_group_only(
    admin_page: Page, demo_server: ServerProcess, demo_tokens: dict[str, str]
) -> None:
    page, name = admin_page, "browser_products"
    page.goto(demo_server.url(f"{TOOLS}add/"))
    page.fill("#id_name", name)
    page.fill("#id_description", "Products of the shop, made in the admin.")
    page.set_checked("#id_enabled", False)
    page.select_option("#id_kind", "model_query")
    page.select_option("#id_query-0-model", "shop.Product")
    page.select_option("#id_query-0-operation", "list")
    page.click("input[name=_continue]")
    # Until a model is chosen the query has no fields to offer; saved with one, the form offers them.
    expect(page.locator(".errornote")).to_be_visible()
    # The only complaint is the one the owner acts on next: the lookup field defaults to the primary key.
    expect(page.locator("#query-group .errorlist")).to_have_text(["Choose at least one output field."])
    page.click("#id_query-0-output_fields_add_all")
    expect(page.locator("#id_query-0-output_fields_to option")).to_have_text(["id", "name", "sku", "price"])
    page.click("input[name=_continue]")
    saved(page)

    # Saved disabled and granted to nobody; now enable it and grant it to the group sales.
    expect(page.locator("#id_enabled")).not_to_be_checked()
    page.set_checked("#id_enabled", True)
    page.click("#group_grants-group .add-row a")
    page.select_option("#id_group_grants-0-group", label="sales")
    page.click("input[name=_save]")
    saved(page)
    expect(page.locator("#result_list")).to_contain_text(name)

    assert name in tool_names(demo_server, demo_tokens["alice"])
    assert name not in tool_names(demo_server, demo_tokens["bob"])


def test_a_connected_console_hears_list_changed_when_the_admin_changes_a_tool(
    open_page: Callable[[], Page], admin_page: Page, demo_server: ServerProcess
) -> None:
    console, admin = open_page(), admin_page
    log_in(console, demo_server, "alice", "alice", then="/")
    console.select_option("#revision", "2025-11-25")  # a session with a handshake; 2026-07-28 has none
    console.click("#connect")
    expect(console.locator("#state")).to_contain_text("connected to")
    console.click("[data-send=initialize]")
    # The console answers the initialize result with notifications/initialized.
    expect(console.locator("#log .out", has_text="notifications/initialized")).to_have_count(1)
    # Answered after the notification on the same connection: the session is initialized and lists the tool.
    console.click("[data-send='tools/list']")
    expect(console.locator("#log .in", has_text='"id":2')).to_contain_text(f'"name":"{SEEDED_TOOL}"')
    changed = console.locator("#log .changed")
    expect(changed).to_have_count(0)

    run_tool_action(admin, demo_server, SEEDED_TOOL, "disable_tools")
    expect(changed).to_have_count(1)
    expect(changed.first).to_contain_text("notifications/tools/list_changed")

    run_tool_action(admin, demo_server, SEEDED_TOOL, "enable_tools")
    expect(changed).to_have_count(2)


def widths(page: Page) -> dict[str, Any]:
    """The window's width, the page's and the content's, and each box in the content that hides a wider inside
    behind a horizontal scroll bar (a table cut off at the right edge). Boxes clipped away on purpose, such as
    the headings Django 6.1's admin keeps for screen readers alone (``visually-hidden``), are no such box."""
    return dict(
        page.evaluate(
            """() => {
                const content = document.getElementById("content");
                const scrolled = [...content.querySelectorAll("*")].filter((box) => {
                    const style = getComputedStyle(box);
                    return box.clientWidth > 0 && box.scrollWidth > box.clientWidth + 1
                        && style.overflowX !== "visible" && style.clip === "auto" && style.clipPath === "none";
                }).map((box) => `${box.tagName} ${box.className}: ${box.scrollWidth} > ${box.clientWidth}`);
                return {
                    window: window.innerWidth,
                    page: document.documentElement.scrollWidth,
                    content: content.scrollWidth,
                    scrolled: scrolled,
                };
            }"""
        )
    )


def audit_a_call(server: ServerProcess, token: str) -> None:
    """One tools/call, so the audit changelist has a row."""
    result = mcp_request(
        server, token, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, **{"Mcp-Name": "add"}
    )
    assert result["isError"] is False, result


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("tool changelist", id="tool-changelist"),
        pytest.param("tool change page", id="tool-change"),
        pytest.param("audit changelist", id="audit-changelist"),
    ],
)
def test_the_admin_pages_fit_1280_pixels(
    where: str, admin_page: Page, demo_server: ServerProcess, demo_tokens: dict[str, str]
) -> None:
    if where == "tool changelist":
        admin_page.goto(demo_server.url(TOOLS))
    elif where == "tool change page":
        admin_page.goto(tool_change_url(admin_page, demo_server, SEEDED_TOOL))
    else:
        audit_a_call(demo_server, demo_tokens["alice"])
        admin_page.goto(demo_server.url("/admin/mcp_tools/toolcall/"))
        expect(admin_page.locator("#result_list tbody tr").first).to_be_visible()

    measured = widths(admin_page)

    assert measured["window"] == WIDTH
    assert measured["page"] <= measured["window"], measured
    assert measured["content"] <= measured["window"], measured
    assert measured["scrolled"] == [], measured


def test_a_failing_test_keeps_a_screenshot_and_the_html_of_its_open_pages(
    page: Page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What tests/conftest.py's report hook calls when a test fails with pages open.
    monkeypatch.setenv(ARTIFACTS_VARIABLE, str(tmp_path / "kept"))
    page.set_content("<main><h1>Kept page</h1></main>")

    reported = report_pages("tests/test_browser_admin.py::test_x[a b]")

    stem = "tests_test_browser_admin.py_test_x_a_b-page1"
    kept = tmp_path / "kept"
    assert reported == f"{kept / stem}.png\n{kept / stem}.html"
    assert (kept / f"{stem}.png").read_bytes().startswith(b"\x89PNG")
    assert "<h1>Kept page</h1>" in (kept / f"{stem}.html").read_text()


def test_the_tool_page_shows_the_fields_of_the_chosen_kind_and_saves_an_admin_action_tool(
    admin_page: Page, demo_server: ServerProcess
) -> None:
    page = admin_page
    page.goto(demo_server.url(f"{TOOLS}add/"))
    # A new tool is a callable until told otherwise: only the callable's field shows.
    expect(page.locator("#id_callable_name")).to_be_visible()
    expect(page.locator("#id_api_action")).to_be_hidden()
    expect(page.locator("#id_admin_action-action")).to_be_hidden()

    page.fill("#id_name", "browser_cancel_orders")
    page.select_option("#id_kind", "admin_action")
    expect(page.locator("#id_callable_name")).to_be_hidden()
    expect(page.locator("#id_admin_action-action")).to_be_visible()
    # The built-in delete asks for confirmation on a page of its own: offered, marked as not usable.
    delete = page.locator("#id_admin_action-action option[value='shop.order:delete_selected']")
    expect(delete).to_contain_text("not usable")
    page.select_option("#id_admin_action-action", "shop.order:cancel_orders")
    page.fill("#id_admin_action-filters", "id__in")
    page.fill("#id_admin_action-max_rows", "5")
    page.click("input[name=_continue]")
    saved(page)
    # Saved, the page opens on the tool's own kind, with its configuration.
    expect(page.locator("#id_admin_action-action")).to_have_value("shop.order:cancel_orders")
    expect(page.locator("#id_admin_action-filters")).to_have_value("id__in")
    expect(page.locator("#id_callable_name")).to_be_hidden()
    expect(page.locator("#id_description")).to_have_value("Cancel selected orders")

"""The tool admin's "Try it", "What clients see", export and import pages in a real headless Chromium, on the demo
site served by uvicorn."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import FilePayload, Page, expect

from tests.live.browser_pages import TOOLS, mcp_reply, tool_change_url
from tests.live.servers import ServerProcess

pytest_plugins = ["tests.live.fixtures", "tests.live.browser"]
pytestmark = pytest.mark.live

AUDIT = "/admin/mcp_tools/toolcall/"
# Granted to the group sales (alice), not to support (bob).
SALES_TOOL = "order_stats"
# The demo's query scope lets a user read the orders of the customers they manage only.
ORDERS_BY_STATUS = """
    SELECT o.status, COUNT(*), SUM(o.total) FROM shop_order o
    JOIN shop_customer c ON c.id = o.customer_id
    JOIN auth_user u ON u.id = c.account_manager_id
    WHERE u.username = ? GROUP BY o.status
"""
# Exported, edited and imported: a callable whose description is changed, a model query left as it was.
EDITED, KEPT = "order_summary", "get_customer"
NEW_DESCRIPTION = "Describe one order, edited in an exported file."


def open_from_change_page(page: Page, server: ServerProcess, tool: str, link: str) -> None:
    """Open one of the links at the top of a tool's change page."""
    page.goto(tool_change_url(page, server, tool))
    href = page.get_attribute(link, "href")
    assert href, f"no link {link}"
    page.click(link)
    page.wait_for_url(server.url(href))


def choose_user(page: Page, username: str) -> None:
    """On the "Try it" page, choose the user the call is made as."""
    page.select_option("#id_user", username)
    page.click("#choose-user")
    expect(page.locator("#try-user")).to_have_text(username)


def orders_by_status(demo_env: dict[str, str], username: str) -> dict[str, tuple[int, Decimal]]:
    """The count and the sum of the totals of the orders ``username`` manages, by status, read from the database."""
    with closing(sqlite3.connect(f"file:{demo_env['MCP_DEMO_DATABASE']}?mode=ro", uri=True)) as database:
        rows = database.execute(ORDERS_BY_STATUS, [username]).fetchall()
    return {status: (count, cents(total)) for status, count, total in rows}


def cents(amount: object) -> Decimal:
    return Decimal(str(amount)).quantize(Decimal("0.01"))


def run_trial(page: Page) -> None:
    page.click("#try-run")
    expect(page.locator("#try-result")).to_be_visible()
    expect(page.locator("#try-time")).to_have_text(re.compile(r"^\d+(\.\d)? ms$"))


def test_a_trial_answers_as_the_chosen_user_would_be_answered_and_is_audited(
    admin_page: Page, demo_server: ServerProcess, demo_env: dict[str, str], demo_tokens: dict[str, str]
) -> None:
    page = admin_page
    open_from_change_page(page, demo_server, SALES_TOOL, "#try-tool-link")
    choose_user(page, "alice")
    expect(page.locator("#try-not-visible")).to_have_count(0)
    # metrics is checked on its default (count); add the sum and group by status through the generated form.
    page.check("#id_arg_metrics_1")
    page.check("#id_arg_group_by_0")
    run_trial(page)

    expect(page.locator("#try-error")).to_have_count(0)
    expect(page.locator("#try-is-error")).to_have_text("false")
    structured = json.loads(page.locator("#try-structured").inner_text())
    shown = {row["status"]: (row["count"], cents(row["sum__total"])) for row in structured["results"]}
    # alice's own orders, in every status: the trial ran as alice, within her query scope.
    assert shown == orders_by_status(demo_env, "alice"), structured
    assert len(shown) == 4, structured

    # bob (support) is not granted the tool: the page warns, and the call answers as it does to bob's client.
    page.click("#change-user")
    choose_user(page, "bob")
    expect(page.locator("#try-not-visible")).to_contain_text("bob does not see this tool")
    run_trial(page)
    client = mcp_reply(
        demo_server, demo_tokens["bob"], "tools/call", {"name": SALES_TOOL, "arguments": {}}, **{"Mcp-Name": SALES_TOOL}
    )
    assert client["error"]["message"] == f"Unknown tool: {SALES_TOOL}", client
    expect(page.locator("#try-error")).to_have_text(f"{client['error']['code']} {client['error']['message']}")
    expect(page.locator("#try-structured")).to_have_count(0)

    # Both trials are in the audit trail, made over the transport "admin" by "admin trial by admin".
    page.goto(demo_server.url(f"{AUDIT}?transport__exact=admin"))
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    for username, outcome in (("alice", "OK"), ("bob", "Denied or unknown tool")):
        row = rows.filter(has=page.locator(".field-username", has_text=re.compile(f"^{username}$")))
        expect(row).to_have_count(1)
        expect(row.locator(".field-tool_name")).to_have_text(SALES_TOOL)
        expect(row.locator(".field-username")).to_have_text(username)
        expect(row.locator(".field-client")).to_have_text("admin trial by admin")
        expect(row.locator(".field-transport")).to_have_text("admin")
        expect(row.locator(".field-outcome")).to_have_text(outcome)


def test_what_clients_see_shows_the_entry_per_revision_and_who_sees_the_tool(
    admin_page: Page, demo_server: ServerProcess
) -> None:
    page = admin_page
    open_from_change_page(page, demo_server, SALES_TOOL, "#clients-see-link")

    headings = page.locator("#definitions h3")
    expect(headings.first).to_be_visible()
    revisions = ", ".join(headings.all_inner_texts())
    assert "2026-07-28" in revisions and "2025-06-18" in revisions, revisions
    for definition in page.locator("#definitions pre.definition").all():
        assert json.loads(definition.inner_text())["name"] == SALES_TOOL
    expect(page.locator("#granted-groups")).to_have_text(re.compile(r"^sales \(\d+ members?\)$"))
    visible = page.locator("#visible-users li")
    expect(visible.filter(has_text=re.compile(r"^alice$"))).to_have_count(1)
    expect(visible.filter(has_text=re.compile(r"^bob$"))).to_have_count(0)
    expect(page.locator("#audience")).not_to_contain_text("bob")


def export_tools(page: Page, server: ServerProcess, names: list[str], directory: Path) -> dict[str, Any]:
    """Select ``names`` in the tool changelist, run "Export selected tools" and read the file it downloads."""
    page.goto(server.url(TOOLS))
    for name in names:
        row = page.locator("#result_list tbody tr", has=page.locator("th a", has_text=re.compile(f"^{name}$")))
        expect(row).to_have_count(1)
        row.locator("input.action-select").check()
    page.select_option("select[name=action]", "export_tools")
    with page.expect_download() as download:
        page.click("button[name=index]")
    assert download.value.suggested_filename == "mcp-tools.json"
    saved = directory / "exported.json"
    download.value.save_as(saved)
    return dict(json.loads(saved.read_text()))


def upload(page: Page, server: ServerProcess, document: dict[str, Any]) -> None:
    """Upload ``document`` on the "Import tools" page, reached from the tool changelist, and review it."""
    page.goto(server.url(TOOLS))
    page.click(".object-tools a:text-is('Import tools')")
    file = FilePayload(name="tools.json", mimeType="application/json", buffer=json.dumps(document).encode())
    page.set_input_files("#id_file", files=[file])
    page.click("input[type=submit][value='Review changes']")
    expect(page.locator("#content-main table").first).to_be_visible()


def description_on_change_page(page: Page, server: ServerProcess, name: str) -> str:
    page.goto(tool_change_url(page, server, name))
    return page.input_value("#id_description")


def test_exported_tools_edited_in_the_file_are_imported_after_review_and_a_hostile_file_is_refused(
    admin_page: Page, demo_server: ServerProcess, tmp_path: Path
) -> None:
    page = admin_page
    document = export_tools(page, demo_server, [EDITED, KEPT], tmp_path)
    tools = {tool["name"]: tool for tool in document["tools"]}
    assert sorted(tools) == sorted([EDITED, KEPT])
    assert tools[KEPT]["query"]["model"] == "shop.Customer"
    old_description = tools[EDITED]["description"]
    tools[EDITED]["description"] = NEW_DESCRIPTION

    upload(page, demo_server, document)
    changed = page.locator("table", has=page.locator("caption", has_text="Changed")).locator("tbody tr")
    expect(changed).to_have_count(1)
    expect(changed.locator("td")).to_have_text(
        [EDITED, "description", json.dumps(old_description), json.dumps(NEW_DESCRIPTION)]
    )
    expect(page.locator("#content-main p", has_text="Unchanged:")).to_have_text(f"Unchanged: {KEPT}")
    page.click("input[type=submit][value=Apply]")
    expect(page.locator(".messagelist .success")).to_have_text("Imported: 0 tool(s) added, 1 changed.")
    assert description_on_change_page(page, demo_server, EDITED) == NEW_DESCRIPTION

    # A tool exposing users' password hashes, in a file that also changes the description again: refused whole.
    leak = {**tools[KEPT], "name": "leak", "groups": []}
    leak["query"] = {**leak["query"], "model": "auth.User", "output_fields": ["id", "username", "password"]}
    leak["query"]["relations"] = []
    tools[EDITED]["description"] = "Changed by a file that is refused."
    upload(page, demo_server, {**document, "tools": [tools[EDITED], leak]})
    expect(page.locator(".errornote")).to_contain_text("Nothing can be imported")
    expect(page.locator("#content-main .errorlist")).to_contain_text(
        "Tool 'leak' query: auth.User has no field 'password' that may be exposed."
    )
    expect(page.locator("input[type=submit][value=Apply]")).to_have_count(0)

    page.goto(demo_server.url(f"{TOOLS}?q=leak"))
    expect(page.locator(".paginator")).to_contain_text("0 tools")
    assert description_on_change_page(page, demo_server, EDITED) == NEW_DESCRIPTION

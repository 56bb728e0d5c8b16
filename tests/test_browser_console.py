"""The demo site in a real headless Chromium: an icon for every page, and the landing page's console, in the first
screen, speaking 2026-07-28 by default (no handshake, a listen for changes) and the older revisions with their
handshake."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.live.browser_pages import HEIGHT, log_in
from tests.live.servers import ServerProcess

pytest_plugins = ["tests.live.fixtures", "tests.live.browser"]
pytestmark = pytest.mark.live


def test_the_site_answers_favicon_ico_with_an_icon(demo_server: ServerProcess) -> None:
    with urllib.request.urlopen(demo_server.url("/favicon.ico"), timeout=10) as response:
        status, kind, body = response.status, response.headers["Content-Type"], response.read()

    assert (status, kind) == (200, "image/svg+xml")
    assert body.startswith(b"<svg")


def test_the_console_speaks_2026_07_28_by_default_and_hears_list_changed(
    open_page: Callable[[], Page], admin_page: Page, demo_server: ServerProcess
) -> None:
    console = open_page()
    log_in(console, demo_server, "alice", "alice", then="/")
    expect(console.locator("#revision")).to_have_value("2026-07-28")

    console.click("#connect")
    expect(console.locator("#log .in", has_text="notifications/subscriptions/acknowledged")).to_have_count(1)
    console.click("[data-send='tools/list']")
    expect(console.locator("#log .in", has_text='"id":2')).to_contain_text('"cacheScope":"private"')
    console.click("[data-send='tools/call']")
    expect(console.locator("#log .in", has_text='"id":3')).to_contain_text('"structuredContent":{"result":5}')
    admin_page.goto(demo_server.url("/admin/mcp_tools/tool/?q=add"))
    admin_page.click("#result_list th a:text-is('add')")
    admin_page.fill("#id_title", "Add two whole numbers")
    admin_page.click("input[name=_save]")

    changed = console.locator("#log .changed")
    expect(changed).to_have_count(1)
    # Heard on the listen the console opened on connecting (request 1).
    expect(changed.first).to_contain_text('"io.modelcontextprotocol/subscriptionId":1')
    expect(console.locator("[data-send=initialize]")).to_be_disabled()
    expect(console.locator("[data-send=ping]")).to_be_disabled()
    expect(console.locator("#revision")).to_be_disabled()
    expect(console.locator("#log .in", has_text='"error":{')).to_have_count(0)


def test_the_console_speaks_an_older_revision_after_its_handshake(
    open_page: Callable[[], Page], demo_server: ServerProcess
) -> None:
    console = open_page()
    log_in(console, demo_server, "alice", "alice", then="/")
    console.select_option("#revision", "2025-06-18")

    console.click("#connect")
    console.click("[data-send=initialize]")
    expect(console.locator("#log .in", has_text='"id":1')).to_contain_text('"protocolVersion":"2025-06-18"')
    expect(console.locator("#log .out", has_text="notifications/initialized")).to_have_count(1)
    console.click("[data-send='tools/call']")

    expect(console.locator("#log .in", has_text='"id":2')).to_contain_text('"structuredContent":{"result":5}')
    expect(console.locator("[data-send='server/discover']")).to_be_disabled()
    expect(console.locator("#log .out", has_text="_meta")).to_have_count(0)


def test_the_console_fills_the_first_screen_and_calls_a_tool_there(
    open_page: Callable[[], Page], demo_server: ServerProcess
) -> None:
    console = open_page()
    log_in(console, demo_server, "alice", "alice", then="/")
    box = console.locator(".console").bounding_box()
    assert box is not None
    # Everything of the console, its log included, is on the 1280 x 800 screen the page opens on.
    assert box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT, box
    assert console.locator("h2").first.text_content() == "Live console"

    console.click("#connect")
    console.click("[data-send='tools/call']")

    expect(console.locator("#log .in", has_text='"id":2')).to_contain_text('"structuredContent":{"result":5}')
    assert console.evaluate("window.scrollY") == 0

"""The demo site's pages in a browser: an icon for every page, and the landing page's console speaking the
newest revision (no handshake, a listen for changes) as well as the older ones. Driven against the demo
served by uvicorn on a freshly seeded database."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live.demo import DemoServer, demo_server, seeded_demo

pytestmark = pytest.mark.live

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 15_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    env, database = seeded_demo(tmp_path_factory)
    with demo_server(env, database.parent / "server.log") as running:
        yield running


@pytest.fixture
def browser_page(server: DemoServer) -> Iterator[Any]:
    """A browser page signed in to the demo as its superuser."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip("no Chromium at /usr/bin/chromium")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(server.url("/admin/login/"))
        page.fill("#id_username", "admin")
        page.fill("#id_password", "admin")
        page.click("input[type=submit]")
        page.wait_for_url(server.url("/admin/"), timeout=WAIT_MS)
        try:
            yield page
        finally:
            browser.close()


def test_the_site_answers_favicon_ico_with_an_icon(server: DemoServer) -> None:
    with urllib.request.urlopen(server.url("/favicon.ico"), timeout=10) as response:
        status, kind, body = response.status, response.headers["Content-Type"], response.read()

    assert (status, kind) == (200, "image/svg+xml")
    assert body.startswith(b"<svg")


def log_shows(page: Any, text: str) -> None:
    page.wait_for_function("t => document.getElementById('log').textContent.includes(t)", arg=text, timeout=WAIT_MS)


def test_the_console_speaks_2026_07_28_by_default_and_hears_list_changed(browser_page: Any, server: DemoServer) -> None:
    page = browser_page
    page.goto(server.url("/"))
    assert page.eval_on_selector("#revision", "e => e.value") == "2026-07-28"

    page.click("#connect")
    log_shows(page, "notifications/subscriptions/acknowledged")
    page.click("[data-send='tools/list']")
    log_shows(page, '"cacheScope":"private"')
    page.click("[data-send='tools/call']")
    log_shows(page, '"structuredContent":{"result":5}')
    admin = page.context.new_page()
    admin.goto(server.url("/admin/mcp_tools/tool/?q=add"))
    admin.click("#result_list a:text-is('add')")
    admin.fill("#id_title", "Add two whole numbers")
    admin.click("input[name=_save]")
    log_shows(page, "notifications/tools/list_changed")

    assert page.eval_on_selector("[data-send='initialize']", "e => e.disabled") is True
    assert page.eval_on_selector("[data-send='ping']", "e => e.disabled") is True
    assert '"error":{' not in page.eval_on_selector("#log", "e => e.textContent")


def test_the_console_still_speaks_the_older_revisions_with_a_handshake(browser_page: Any, server: DemoServer) -> None:
    page = browser_page
    page.goto(server.url("/"))
    page.select_option("#revision", "2025-11-25")

    page.click("#connect")
    page.click("[data-send='initialize']")
    log_shows(page, '"result":{"protocolVersion":"2025-11-25"')
    page.click("[data-send='tools/call']")
    log_shows(page, '"structuredContent":{"result":5}')

    assert page.eval_on_selector("[data-send='server/discover']", "e => e.disabled") is True
    assert '"method":"notifications/initialized"' in page.eval_on_selector("#log", "e => e.textContent")

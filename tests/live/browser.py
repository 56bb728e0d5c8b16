"""Pytest fixtures for browser tests in a real headless Chromium on the demo site served by uvicorn.

Load them with ``pytest_plugins = ["tests.live.fixtures", "tests.live.browser"]`` (the first appends the
server's log to a failure's report); the helpers they go with are in ``tests.live.browser_pages``.

- ``demo_server``: one uvicorn process serving the demo site (``project.asgi``, with its landing page and
  the admin's static files) on a database built with ``make demo``'s steps: users admin, alice (group
  sales) and bob (group support), each with the password of their name.
- ``demo_env``: that site's environment, for ``tests.live.demo.manage``.
- ``demo_tokens``: an MCP access token for alice and one for bob on that site.
- ``chromium``: one headless Chromium per module, the distribution's ``chromium`` driven by Playwright.
  Without it the test is skipped, or fails with MCP_REQUIRE_SERVICES=1.
- ``open_page``: opens pages at 1280 by 800, each with cookies of its own (or a given ``storage_state``),
  closed after the test; ``page``: one such page; ``admin_page``: one signed in to the admin as admin (a
  session signed in once per module, ``admin_state``), still blank; ``browser_pages.log_in`` signs in anyone.

When a test fails with pages open, ``tests/conftest.py`` saves a screenshot and the HTML of each to
MCP_BROWSER_ARTIFACTS (default ``.ci/artifacts/browser/``) and names the files in the report.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.live import services
from tests.live.browser_pages import HEIGHT, WAIT_MS, WIDTH, log_in, open_browsers
from tests.live.demo import manage, seeded_demo
from tests.live.servers import APPLICATION, ServerProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

DEMO_APPLICATION = "project.asgi:application"
ISSUE_TOKENS = """
import json
from django.contrib.auth import get_user_model
from mcp_tools.models import AccessToken
users = get_user_model().objects.filter(username__in=["alice", "bob"])
print(json.dumps({user.username: AccessToken.objects.issue(user, name="browser tests")[1] for user in users}))
"""
# Without the background-networking switches Chromium reaches out to Google's services, which a closed
# network refuses; the sandbox needs user namespaces that containers (and CI) often lack.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class DemoServer(ServerProcess):
    """A uvicorn process serving the demo site's ASGI application rather than the test suite's."""

    def command(self) -> list[str]:
        return [DEMO_APPLICATION if part == APPLICATION else part for part in super().command()]


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env, _database = seeded_demo(tmp_path_factory)
    return env


@pytest.fixture(scope="module")
def demo_server(demo_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = DemoServer("demo", demo_env, tmp_path_factory.mktemp("browser") / "server-demo.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def demo_tokens(demo_env: dict[str, str]) -> dict[str, str]:
    """A fresh MCP access token for each of alice and bob, by username."""
    # One process for both: each start of Django costs seconds on a busy machine.
    issued = manage(demo_env, "shell", "--no-imports", "-c", ISSUE_TOKENS).stdout
    return dict(json.loads(issued))


def chromium_path() -> str:
    """The distribution's Chromium; skips, or fails with MCP_REQUIRE_SERVICES=1, when it is not installed."""
    path = shutil.which("chromium")
    if path is None:
        services.unavailable("Needs Chromium for browser tests: install the distribution's chromium package")
    return path


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    path = chromium_path()
    from playwright.sync_api import expect, sync_playwright

    # Assertions that wait (expect(...).to_have_count) give up when navigations and selectors do.
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        open_browsers.append(browser)
        try:
            yield browser
        finally:
            open_browsers.remove(browser)
            browser.close()


@pytest.fixture
def open_page(chromium: Browser) -> Iterator[Callable[..., Page]]:
    """Opens pages, each in a context of its own (its own cookies, or those of ``signed_in_as``), all closed
    after the test."""
    contexts: list[BrowserContext] = []

    def new_page(storage_state: Any = None) -> Page:
        context = chromium.new_context(viewport={"width": WIDTH, "height": HEIGHT}, storage_state=storage_state)
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        return context.new_page()

    try:
        yield new_page
    finally:
        for context in contexts:
            context.close()


@pytest.fixture
def page(open_page: Callable[..., Page]) -> Page:
    return open_page()


@pytest.fixture(scope="module")
def admin_state(chromium: Browser, demo_server: ServerProcess) -> Any:
    """The cookies of a session signed in to the admin as admin, signed in once per module."""
    context = chromium.new_context()
    context.set_default_timeout(WAIT_MS)
    try:
        log_in(context.new_page(), demo_server, "admin", "admin")
        return context.storage_state()
    finally:
        context.close()


@pytest.fixture
def admin_page(open_page: Callable[..., Page], admin_state: Any) -> Page:
    """A page signed in to the admin as admin, on the admin's index."""
    return open_page(storage_state=admin_state)

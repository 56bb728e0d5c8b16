"""The confirmation page in a real browser, as a client that cannot ask its user sends bob there: the official SDK
calls the demo's ``ship_orders`` and is told where the page is (or, having declared URL-mode elicitation, asked
to open it); bob signs in, reads what the call will change and confirms or declines; the SDK's same call then
runs once, or is told it was declined. Nobody else finds the page."""

from __future__ import annotations

import asyncio
import queue
import re
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from contextlib import closing
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
import pytest
from mcp import Client, MCPError, UrlElicitationRequiredError
from playwright.sync_api import Page, expect

from mcp_tools.exceptions import URL_ELICITATION_REQUIRED
from mcp_tools.server.calls.confirmation import DECLINED
from tests.live.browser_pages import MODERN, mcp_request
from tests.live.consent_pages import sign_in
from tests.live.sdk import TIMEOUT, UrlOnlyClient, held_client
from tests.live.servers import ServerProcess

pytest_plugins = ["tests.live.fixtures", "tests.live.browser"]
pytestmark = pytest.mark.live

LEGACY = "2025-11-25"
# The page's address is on the demo's SITE_URL, whose port is not the test server's: the test follows its path.
PAGE_PATH = re.compile(r"^/mcp/confirm/(\d+)/$")
NAMED_PAGE = re.compile(r"open (?:https?://[^/\s]+)?(/mcp/confirm/\d+/) \(signed in as bob\)")
PAID_ORDERS = (
    "SELECT o.id FROM shop_order o JOIN shop_customer c ON c.id = o.customer_id"
    " JOIN auth_user u ON u.id = c.account_manager_id WHERE u.username = 'bob' AND o.status = 'paid' ORDER BY o.id"
)
STATUS = "SELECT status FROM shop_order WHERE id = ?"
CONFIRMED = "Confirmed. Go back to the application and make the same call again"


@pytest.fixture(scope="module")
def paid(demo_env: dict[str, str]) -> list[int]:
    """Paid orders of bob's customers, which ship_orders ships: each test takes orders of its own."""
    with closing(sqlite3.connect(demo_env["MCP_DEMO_DATABASE"])) as connection:
        ids = [order for (order,) in connection.execute(PAID_ORDERS)]
    assert len(ids) >= 6, ids
    return ids


def statuses(demo_env: dict[str, str], orders: list[int]) -> list[str]:
    with closing(sqlite3.connect(demo_env["MCP_DEMO_DATABASE"])) as connection:
        return [connection.execute(STATUS, (order,)).fetchone()[0] for order in orders]


def ship(orders: list[int]) -> Callable[[Client], Awaitable[types.CallToolResult]]:
    return lambda client: client.call_tool("ship_orders", {"id__in": orders})


async def version(client: Client) -> str:
    return client.protocol_version


def text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def named_page(result: types.CallToolResult) -> str:
    """The path of the confirmation page a waiting call's result names."""
    assert result.is_error is True, result
    found = NAMED_PAGE.search(text(result))
    assert found is not None, text(result)
    return found.group(1)


def path_of(url: str) -> tuple[str, str]:
    """The path of the confirmation page at ``url``, and the id of the approval it shows."""
    path = urlsplit(url).path
    found = PAGE_PATH.match(path)
    assert found is not None, url
    return path, found.group(1)


def signed_in_on(open_page: Callable[..., Page], server: ServerProcess, path: str, username: str) -> Page:
    """A fresh browser opens ``path`` signed out, is sent to sign in, signs in as ``username`` and comes back."""
    page = open_page()
    page.goto(server.url(path))
    assert urlsplit(page.url).path == "/oauth/login/", page.url
    sign_in(page, username, username)
    page.wait_for_url(server.url(path))
    return page


def decide(page: Page, button: str, status: str) -> None:
    page.click(button)
    expect(page.locator("#confirm-status")).to_contain_text(status)
    expect(page.locator("#confirm-call")).to_have_count(0)


def test_a_client_that_cannot_ask_names_the_page_and_the_call_runs_once_confirmed_there(
    demo_server: ServerProcess,
    demo_env: dict[str, str],
    demo_tokens: dict[str, str],
    open_page: Callable[..., Page],
    paid: list[int],
) -> None:
    orders = paid[0:2]
    with held_client(demo_server, demo_tokens["bob"], "auto") as sdk:
        assert sdk.call(version) == MODERN
        waiting = sdk.call(ship(orders))
        path = named_page(waiting)

        page = signed_in_on(open_page, demo_server, path, "bob")
        expect(page.locator("#confirm-question")).to_contain_text("Mark selected orders as shipped: 2 orders")
        assert statuses(demo_env, orders) == ["paid", "paid"]  # nothing ran yet
        decide(page, "#confirm-call", CONFIRMED)

        done = sdk.call(ship(orders))
        again = sdk.call(ship(orders))

    assert done.is_error is False and done.structured_content is not None, done
    assert done.structured_content["rows"] == 2
    assert statuses(demo_env, orders) == ["shipped", "shipped"]
    assert named_page(again) != path  # spent: the same call asks anew
    page.reload()
    expect(page.locator("#confirm-status")).to_contain_text("Confirmed, and the call ran.")


def test_declined_on_the_page_the_retry_is_told_so_and_nothing_changes(
    demo_server: ServerProcess,
    demo_env: dict[str, str],
    demo_tokens: dict[str, str],
    open_page: Callable[..., Page],
    paid: list[int],
) -> None:
    orders = paid[2:3]
    with held_client(demo_server, demo_tokens["bob"], "legacy") as sdk:
        assert sdk.call(version) == LEGACY
        page = signed_in_on(open_page, demo_server, named_page(sdk.call(ship(orders))), "bob")
        decide(page, "#decline-call", "Declined: the call will not run.")
        declined = sdk.call(ship(orders))

    assert declined.is_error is True and text(declined) == DECLINED
    assert statuses(demo_env, orders) == ["paid"]


def test_a_legacy_client_declaring_url_mode_is_sent_to_the_page_by_a_32042_error(
    demo_server: ServerProcess,
    demo_env: dict[str, str],
    demo_tokens: dict[str, str],
    open_page: Callable[..., Page],
    paid: list[int],
) -> None:
    orders = paid[3:4]
    asked: list[types.ElicitRequestParams] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="decline")

    with held_client(
        demo_server, demo_tokens["bob"], "legacy", client=UrlOnlyClient, elicitation_callback=person
    ) as sdk:
        assert sdk.call(version) == LEGACY
        with pytest.raises(MCPError) as raised:
            sdk.call(ship(orders))
        assert raised.value.code == URL_ELICITATION_REQUIRED
        [elicitation] = UrlElicitationRequiredError.from_error(raised.value.error).elicitations
        path, approval = path_of(elicitation.url)
        assert elicitation.elicitation_id == f"mcp_tools.confirm.{approval}"
        assert "Mark selected orders as shipped: 1 order" in elicitation.message

        decide(signed_in_on(open_page, demo_server, path, "bob"), "#confirm-call", CONFIRMED)
        done = sdk.call(ship(orders))

    assert done.is_error is False and statuses(demo_env, orders) == ["shipped"], done
    assert asked == []  # sent to the page, never asked in band


def test_a_modern_clients_url_request_is_confirmed_in_the_browser_and_the_sdks_retry_runs(
    demo_server: ServerProcess,
    demo_env: dict[str, str],
    demo_tokens: dict[str, str],
    open_page: Callable[..., Page],
    paid: list[int],
) -> None:
    orders = paid[4:5]
    urls: queue.Queue[str] = queue.Queue()
    decided = threading.Event()
    asked: list[types.ElicitRequestParams] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        """Hands the URL to the test thread, whose browser the person confirms in, and says they opened it."""
        asked.append(params)
        if not isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")
        urls.put(params.url)
        opened = await asyncio.to_thread(decided.wait, TIMEOUT)
        return types.ElicitResult(action="accept" if opened else "cancel")

    with held_client(demo_server, demo_tokens["bob"], "auto", client=UrlOnlyClient, elicitation_callback=person) as sdk:
        assert sdk.call(version) == MODERN
        running = sdk.run(ship(orders))
        try:
            path, _approval = path_of(urls.get(timeout=TIMEOUT))
            page = signed_in_on(open_page, demo_server, path, "bob")
            expect(page.locator("#confirm-question")).to_contain_text("Mark selected orders as shipped: 1 order")
            assert statuses(demo_env, orders) == ["paid"]
            decide(page, "#confirm-call", CONFIRMED)
        finally:
            decided.set()
        done = running.result(TIMEOUT)

    assert done.is_error is False and statuses(demo_env, orders) == ["shipped"], done
    [request] = asked
    assert isinstance(request, types.ElicitRequestURLParams) and request.mode == "url"
    assert "Mark selected orders as shipped: 1 order" in request.message


def test_another_signed_in_user_finds_no_page(
    demo_server: ServerProcess,
    demo_tokens: dict[str, str],
    open_page: Callable[..., Page],
    paid: list[int],
) -> None:
    params = {"name": "ship_orders", "arguments": {"id__in": paid[5:6]}}
    waiting = mcp_request(demo_server, demo_tokens["bob"], "tools/call", params, **{"Mcp-Name": "ship_orders"})
    found = NAMED_PAGE.search("".join(block["text"] for block in waiting["content"]))
    assert waiting["isError"] is True and found is not None, waiting
    path = found.group(1)

    alice = signed_in_on(open_page, demo_server, path, "alice")
    shown = alice.goto(demo_server.url(path))
    bob = signed_in_on(open_page, demo_server, path, "bob")

    assert shown is not None and shown.status == 404
    expect(alice.locator("#confirm-question")).to_have_count(0)
    expect(bob.locator("#confirm-call")).to_be_visible()  # the page is there, for its caller

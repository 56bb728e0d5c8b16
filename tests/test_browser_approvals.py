"""An approver confirms in a real browser: bob (support) asks the demo's ``cancel_orders`` to cancel orders, the
call waits; alice (approvers) opens the approval the answer names, reads what it will do and approves or
rejects with one click; bob's identical retry runs once, or is told it was rejected. An expired approval offers
no decision and the retry asks anew."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from mcp_tools.server.calls.confirmation import REJECTED
from tests.live.browser_pages import log_in, mcp_request
from tests.live.demo import manage
from tests.live.servers import ServerProcess

pytest_plugins = ["tests.live.browser"]
pytestmark = pytest.mark.live

# The page's address is on the demo's SITE_URL, whose port is not the test server's: the test follows its path.
APPROVAL_LINK = re.compile(r"approval (\d+) at (?:https?://[^/]+)?(/admin/mcp_tools/approval/\d+/change/)")
EXPIRE = (
    "from django.utils import timezone; from mcp_tools.models import Approval; "
    "Approval.objects.filter(pk={}).update(expires_at=timezone.now())"
)


def cancel(server: ServerProcess, token: str, orders: list[int]) -> dict[str, Any]:
    params = {"name": "cancel_orders", "arguments": {"id__in": orders}}
    return dict(mcp_request(server, token, "tools/call", params, **{"Mcp-Name": "cancel_orders"}))


def text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


def open_orders(server: ServerProcess, token: str, count: int, skip: int) -> list[int]:
    """Ids of bob's customers' paid orders, which cancel_orders would cancel."""
    params = {"name": "list_orders", "arguments": {"status": "paid", "limit": 50}}
    listed = mcp_request(server, token, "tools/call", params, **{"Mcp-Name": "list_orders"})
    assert "structuredContent" in listed, listed
    ids = [row["id"] for row in listed["structuredContent"]["results"]]
    assert len(ids) >= skip + count
    return ids[skip : skip + count]


def as_alice(open_page: Callable[..., Page], server: ServerProcess, path: str) -> Page:
    page = open_page()
    log_in(page, server, "alice", "alice", then=path)
    return page


def test_an_approver_approves_in_the_admin_and_the_retry_runs_once(
    demo_server: ServerProcess,
    demo_tokens: dict[str, str],
    open_page: Callable[..., Page],
) -> None:
    bob = demo_tokens["bob"]
    orders = open_orders(demo_server, bob, 2, 0)

    waiting = cancel(demo_server, bob, orders)
    assert waiting["isError"] is True
    found = APPROVAL_LINK.search(text(waiting))
    assert found is not None, text(waiting)
    page = as_alice(open_page, demo_server, found.group(2))
    expect(page.locator("#approval-question")).to_contain_text("Cancel selected orders: 2 orders")
    page.click("#approval-approve")
    expect(page.locator(".messagelist .success")).to_contain_text("Approved")

    done = cancel(demo_server, bob, orders)
    again = cancel(demo_server, bob, orders)

    assert done["isError"] is False and done["structuredContent"]["rows"] == 2, done
    assert "cancelled" in text(done)
    assert again["isError"] is True and "waits for an approver" in text(again)  # spent: asks anew


def test_a_rejected_call_is_told_so_and_an_expired_one_offers_no_decision(
    demo_server: ServerProcess,
    demo_env: dict[str, str],
    demo_tokens: dict[str, str],
    open_page: Callable[..., Page],
) -> None:
    bob = demo_tokens["bob"]
    rejected_orders, expired_orders = open_orders(demo_server, bob, 1, 4), open_orders(demo_server, bob, 1, 5)

    first = APPROVAL_LINK.search(text(cancel(demo_server, bob, rejected_orders)))
    assert first is not None
    page = as_alice(open_page, demo_server, first.group(2))
    page.click("#approval-reject")
    expect(page.locator(".messagelist .success")).to_contain_text("Rejected")
    assert text(cancel(demo_server, bob, rejected_orders)) == REJECTED

    second = APPROVAL_LINK.search(text(cancel(demo_server, bob, expired_orders)))
    assert second is not None
    manage(demo_env, "shell", "--no-imports", "-c", EXPIRE.format(second.group(1)))
    page.goto(demo_server.url(second.group(2)))
    expect(page.locator("#approval-question")).to_be_visible()
    expect(page.locator("#approval-approve")).to_have_count(0)
    renewed = APPROVAL_LINK.search(text(cancel(demo_server, bob, expired_orders)))
    assert renewed is not None and renewed.group(1) != second.group(1)

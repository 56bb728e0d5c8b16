"""The site's confirmation page, for clients that cannot ask their user (``CONFIRMATION_FALLBACK = "page"``):
the call answers at once naming the page (URL-mode elicitation where the client declared it: -32042 on a
legacy session, an input_required URL request in 2026-07-28); the caller, signed in, confirms or declines
there; the same call made again runs once. The page is the caller's alone, binds to the rows as shown, and
the caller's own yes never stands in for an approver's."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.core import checks
from django.test import Client, override_settings
from django.utils import timezone

from mcp_tools.checks import check_confirmation_page_served, check_settings
from mcp_tools.exceptions import URL_ELICITATION_REQUIRED
from mcp_tools.models import Approval, Tool, ToolCall
from mcp_tools.server.calls.confirmation import CANNOT_ASK, DECLINED, INPUT_KEY, TOO_LARGE_TO_CONFIRM
from tests.messages import modern_meta
from tests.queries import failed, ok, seed_users
from tests.testapp.models import Item
from tests.wire import connected

pytestmark = pytest.mark.django_db(transaction=True)

SITE = "https://shop.example"
PAGE = {**settings.MCP_TOOLS, "CONFIRMATION_FALLBACK": "page", "SITE_URL": SITE}
URLS = {"elicitation": {"url": {}}}


@pytest.fixture
def people() -> dict[str, Any]:
    made = seed_users()
    Tool.objects.filter(name="item_update").update(confirmation=Tool.Confirmation.USER)
    return made


@pytest.fixture
def page_fallback() -> Any:
    with override_settings(MCP_TOOLS=PAGE):
        yield


def call(user: Any, arguments: dict[str, Any], *, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """``item_update`` on a fresh legacy session of ``user``, from a client that cannot ask its user."""

    async def one() -> dict[str, Any]:
        wire = await connected(user, capabilities=capabilities)
        return await wire.call("item_update", arguments)

    return asyncio.run(one())


def modern_call(user: Any, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    async def one() -> dict[str, Any]:
        wire = await connected(user)
        params = {"name": "item_update", "arguments": arguments, **extra, "_meta": modern_meta(capabilities=URLS)}
        return await wire.request("tools/call", params)

    return asyncio.run(one())


def signed_in(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def page_path(approval: Approval) -> str:
    return f"/mcp/confirm/{approval.pk}/"


def press(client: Client, approval: Approval, button: str) -> str:
    """Open the page as the caller does, then press ``button`` with the page's own form; the page after."""
    page = client.get(page_path(approval)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]*)"', page)
    state = re.search(r'name="state" value="([^"]*)"', page)
    assert token and state, page
    form = {"csrfmiddlewaretoken": token.group(1), "state": state.group(1), button: "1"}
    return client.post(page_path(approval), form, follow=True).content.decode()


def first_item() -> Item:
    return Item.objects.filter(account__manager__username="alice").order_by("pk").first()


def test_by_default_a_client_that_cannot_ask_is_refused(people: dict[str, Any]) -> None:
    item = first_item()
    assert failed(call(people["alice"], {"id": item.pk, "quantity": 70})) == CANNOT_ASK
    assert not Approval.objects.exists()


def test_the_result_names_the_page_and_the_confirmed_retry_runs_once(
    people: dict[str, Any], page_fallback: None
) -> None:
    item = first_item()
    arguments = {"id": item.pk, "quantity": 71}

    waiting = failed(call(people["alice"], arguments))
    [approval] = Approval.objects.all()
    assert f"{SITE}/mcp/confirm/{approval.pk}/" in waiting and "signed in as alice" in waiting
    assert (approval.confirmer, approval.approvers_id) == (Approval.Confirmer.CALLER, None)
    assert failed(call(people["alice"], arguments)) == waiting  # the same request, not a second one

    shown = signed_in(people["alice"]).get(page_path(approval)).content.decode()
    assert f"quantity: {item.quantity} → 71" in shown and 'id="confirm-call"' in shown
    after = press(signed_in(people["alice"]), approval, "_confirm")
    assert "make the same call again" in after
    assert Item.objects.get(pk=item.pk).quantity == item.quantity  # nothing ran yet

    assert ok(call(people["alice"], arguments))["results"][0]["quantity"] == 71
    assert "open " in failed(call(people["alice"], arguments))  # spent: asked anew, nothing run
    rows = list(ToolCall.objects.order_by("pk").values_list("outcome", "confirmation", "confirmed_by__username"))
    assert rows == [("pending", "", None), ("pending", "", None), ("ok", "page", "alice"), ("pending", "", None)]
    assert "Confirmed, and the call ran." in signed_in(people["alice"]).get(page_path(approval)).content.decode()


def test_declining_on_the_page_ends_the_call(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    arguments = {"id": item.pk, "quantity": 72}
    call(people["alice"], arguments)

    after = press(signed_in(people["alice"]), Approval.objects.get(), "_decline")

    assert "Declined: the call will not run." in after
    assert failed(call(people["alice"], arguments)) == DECLINED
    assert Item.objects.get(pk=item.pk).quantity == item.quantity


def test_the_page_is_the_callers_alone(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    call(people["alice"], {"id": item.pk, "quantity": 73})
    approval = Approval.objects.get()
    bob = people["bob"]
    bob.is_superuser = bob.is_staff = True
    bob.save()

    other = signed_in(bob)
    assert other.get(page_path(approval)).status_code == 404
    assert other.post(page_path(approval), {"_confirm": "1"}).status_code in (403, 404)
    signed_out = Client().get(page_path(approval))
    assert signed_out.status_code == 302 and "/oauth/login/" in signed_out["Location"]
    # Not even a superuser decides a caller's own call in the admin.
    admin_post = Client()
    admin_post.force_login(bob)
    admin_post.post(f"/admin/mcp_tools/approval/{approval.pk}/decide/", {"_approve": "1"})
    assert Approval.objects.get().status == Approval.Status.PENDING


def test_a_post_without_the_csrf_token_decides_nothing(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    call(people["alice"], {"id": item.pk, "quantity": 74})
    approval = Approval.objects.get()

    forged = signed_in(people["alice"]).post(page_path(approval), {"_confirm": "1", "state": approval.state})

    assert forged.status_code == 403
    assert Approval.objects.get().status == Approval.Status.PENDING


def test_the_page_is_never_framed_or_cached(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    call(people["alice"], {"id": item.pk, "quantity": 75})

    shown = signed_in(people["alice"]).get(page_path(Approval.objects.get()))

    assert shown["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in shown["Content-Security-Policy"]
    assert "no-store" in shown["Cache-Control"]


def test_a_yes_binds_to_the_rows_as_the_page_showed_them(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    arguments = {"id": item.pk, "status": "retired"}
    call(people["alice"], arguments)
    approval = Approval.objects.get()
    client = signed_in(people["alice"])
    page = client.get(page_path(approval)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]*)"', page)
    state = re.search(r'name="state" value="([^"]*)"', page)
    assert token and state
    Item.objects.filter(pk=item.pk).update(quantity=4343)  # the rows change while the person reads

    after = client.post(
        page_path(approval), {"csrfmiddlewaretoken": token.group(1), "state": state.group(1), "_confirm": "1"}
    ).content.decode()

    assert "The rows changed while you looked" in after and f"status: {item.status} → retired" in after, after
    assert Approval.objects.get().status == Approval.Status.PENDING

    press(client, approval, "_confirm")  # confirmed as shown now; then they change again before the retry
    Item.objects.filter(pk=item.pk).update(quantity=4444)
    assert "open " in failed(call(people["alice"], arguments))
    assert Item.objects.get(pk=item.pk).status == item.status
    assert Approval.objects.filter(status=Approval.Status.PENDING).count() == 1


def test_a_yes_binds_to_its_arguments_and_expires(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    call(people["alice"], {"id": item.pk, "quantity": 76})
    press(signed_in(people["alice"]), Approval.objects.get(), "_confirm")

    assert "open " in failed(call(people["alice"], {"id": item.pk, "quantity": 77}))
    Approval.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert "open " in failed(call(people["alice"], {"id": item.pk, "quantity": 76}))
    assert Item.objects.get(pk=item.pk).quantity == item.quantity


def test_the_callers_yes_never_stands_in_for_an_approvers(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    arguments = {"id": item.pk, "quantity": 78}
    call(people["alice"], arguments)
    press(signed_in(people["alice"]), Approval.objects.get(), "_confirm")
    tool = Tool.objects.get(name="item_update")
    tool.confirmation = Tool.Confirmation.APPROVER
    tool.approvers = Group.objects.create(name="Order approvers")
    tool.save()

    assert "waits for an approver" in failed(call(people["alice"], arguments))
    assert Item.objects.get(pk=item.pk).quantity == item.quantity


def test_a_call_too_large_to_keep_is_refused_and_nothing_kept(people: dict[str, Any], page_fallback: None) -> None:
    tool = Tool(name="add_category", callable_name="add_category", everyone=True, confirmation="user")
    tool.full_clean()
    tool.save()

    async def huge() -> dict[str, Any]:
        wire = await connected(people["alice"])
        return await wire.call("add_category", {"name": "x" * 70_000})

    assert failed(asyncio.run(huge())) == TOO_LARGE_TO_CONFIRM
    assert not Approval.objects.exists()


def test_a_legacy_client_declaring_url_mode_gets_32042(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    arguments = {"id": item.pk, "quantity": 79}

    reply = call(people["alice"], arguments, capabilities=URLS)

    error = reply["error"]
    [approval] = Approval.objects.all()
    assert error["code"] == URL_ELICITATION_REQUIRED
    [elicitation] = error["data"]["elicitations"]
    assert elicitation["mode"] == "url" and elicitation["url"] == f"{SITE}/mcp/confirm/{approval.pk}/"
    assert elicitation["elicitationId"] and f"quantity: {item.quantity} → 79" in elicitation["message"]
    press(signed_in(people["alice"]), approval, "_confirm")
    assert ok(call(people["alice"], arguments, capabilities=URLS))["results"][0]["quantity"] == 79
    assert ToolCall.objects.order_by("pk").values_list("outcome", flat=True)[0] == "pending"


def test_a_modern_client_declaring_url_mode_gets_a_url_request(people: dict[str, Any], page_fallback: None) -> None:
    item = first_item()
    arguments = {"id": item.pk, "quantity": 80}

    asked = modern_call(people["alice"], arguments)["result"]
    [approval] = Approval.objects.all()
    assert asked["resultType"] == "input_required" and "requestState" not in asked
    request = asked["inputRequests"][INPUT_KEY]
    assert request["method"] == "elicitation/create" and request["params"]["mode"] == "url"
    assert request["params"]["url"] == f"{SITE}/mcp/confirm/{approval.pk}/" and "elicitationId" not in request["params"]

    opened = {"inputResponses": {INPUT_KEY: {"action": "accept"}}}
    assert "open " in failed(modern_call(people["alice"], arguments, **opened))  # not confirmed yet: no loop
    declined = {"inputResponses": {INPUT_KEY: {"action": "decline"}}}
    assert failed(modern_call(people["alice"], arguments, **declined)) == DECLINED
    press(signed_in(people["alice"]), approval, "_confirm")
    assert ok(modern_call(people["alice"], arguments, **opened))["results"][0]["quantity"] == 80
    assert Item.objects.get(pk=item.pk).quantity == 80


def test_the_system_checks_name_a_fallback_that_cannot_work() -> None:
    with override_settings(MCP_TOOLS={"CONFIRMATION_FALLBACK": "ask"}):
        assert [m.id for m in check_settings()] == ["mcp_tools.E016"]
    with override_settings(MCP_TOOLS={"CONFIRMATION_FALLBACK": "page"}):
        assert [m.id for m in check_settings()] == ["mcp_tools.E017"]
    with override_settings(MCP_TOOLS=PAGE):
        assert check_settings() == [] and check_confirmation_page_served() == []
    with override_settings(MCP_TOOLS=PAGE, ROOT_URLCONF="tests.urls_without_oauth"):
        [missing] = check_confirmation_page_served()
        assert (missing.id, missing.level) == ("mcp_tools.E018", checks.ERROR)

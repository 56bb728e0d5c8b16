"""Calls an approver confirms: the call answers at once with a pending approval; a member of the approvers group
(never the caller) approves or rejects it in the admin; the caller's identical retry runs once. Approvals bind
to tool, caller, arguments and rows, expire, and are spent once."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone

from mcp_tools.admin.dashboard import DEFAULT_PERIOD, summarize
from mcp_tools.models import Approval, Tool, ToolCall
from mcp_tools.server.calls.confirmation import REJECTED, TOO_LARGE_TO_APPROVE
from mcp_tools.tools.transfer import export, importer
from tests.live.query_data import grant
from tests.queries import failed, ok, seed_users
from tests.testapp.models import Item
from tests.wire import connected

pytestmark = pytest.mark.django_db(transaction=True)

APPROVER_PERMISSIONS = ("mcp_tools.approve_call", "mcp_tools.view_approval")


@pytest.fixture
def people() -> dict[str, Any]:
    made = seed_users()
    approvers = Group.objects.create(name="Order approvers")
    Tool.objects.filter(name="item_update").update(confirmation=Tool.Confirmation.APPROVER, approvers=approvers)
    carol = made["carol"]
    carol.is_staff = True
    carol.save()
    carol.groups.add(approvers)
    made["carol"] = grant(carol, *APPROVER_PERMISSIONS)
    made["approvers"] = approvers
    return made


def call(user: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One call on a fresh legacy session of ``user`` (the caller's client needs no elicitation)."""

    async def one() -> dict[str, Any]:
        wire = await connected(user)
        return await wire.call(name, arguments)

    return asyncio.run(one())


def admin_as(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def decide(client: Client, approval: Approval, button: str) -> str:
    """Open the approval's page as the approver does, then press ``button``; returns the page shown after."""
    page = client.get(f"/admin/mcp_tools/approval/{approval.pk}/change/").content.decode()
    found = re.search(r'name="state" value="([^"]*)"', page)
    state = found.group(1) if found else ""
    answer = client.post(f"/admin/mcp_tools/approval/{approval.pk}/decide/", {"state": state, button: "1"}, follow=True)
    return answer.content.decode()


def first_item() -> Item:
    return Item.objects.filter(account__manager__username="alice").order_by("pk").first()


def test_a_call_waits_for_an_approver_then_runs_once(people: dict[str, Any]) -> None:
    item = first_item()
    arguments = {"id": item.pk, "quantity": 55}

    waiting = failed(call(people["alice"], "item_update", arguments))
    again = failed(call(people["alice"], "item_update", arguments))

    [approval] = Approval.objects.all()
    assert f"approval {approval.pk}" in waiting and "“Order approvers”" in waiting
    assert f"/admin/mcp_tools/approval/{approval.pk}/change/" in waiting
    assert again == waiting  # the same request, not a second one
    assert f"quantity: {item.quantity} → 55" in approval.question
    assert Item.objects.get(pk=item.pk).quantity == item.quantity

    page = decide(admin_as(people["carol"]), approval, "_approve")
    assert "Approved" in page

    assert ok(call(people["alice"], "item_update", arguments))["results"][0]["quantity"] == 55
    replayed = failed(call(people["alice"], "item_update", arguments))  # spent: a new request, nothing run
    assert "waits for an approver" in replayed
    rows = list(ToolCall.objects.order_by("pk").values_list("outcome", "confirmation", "confirmed_by__username"))
    assert rows == [
        ("pending", "", None),
        ("pending", "", None),
        ("ok", "approver", "carol"),
        ("pending", "", None),
    ]
    assert Approval.objects.get(pk=approval.pk).status == Approval.Status.USED
    board = summarize(DEFAULT_PERIOD)
    assert (board.calls, board.confirmed, board.unconfirmed) == (4, 1, 3)


def test_a_rejected_call_never_runs(people: dict[str, Any]) -> None:
    item = first_item()
    arguments = {"id": item.pk, "quantity": 56}
    call(people["alice"], "item_update", arguments)

    decide(admin_as(people["carol"]), Approval.objects.get(), "_reject")

    assert failed(call(people["alice"], "item_update", arguments)) == REJECTED
    assert Item.objects.get(pk=item.pk).quantity == item.quantity


def test_an_approval_binds_to_its_arguments_and_caller(people: dict[str, Any]) -> None:
    item = first_item()
    call(people["alice"], "item_update", {"id": item.pk, "quantity": 57})
    decide(admin_as(people["carol"]), Approval.objects.get(), "_approve")

    other = failed(call(people["alice"], "item_update", {"id": item.pk, "quantity": 58}))

    assert "waits for an approver" in other
    assert Item.objects.get(pk=item.pk).quantity == item.quantity
    assert Approval.objects.filter(status=Approval.Status.APPROVED).count() == 1  # still unspent


def test_rows_changed_since_the_approval_ask_again(people: dict[str, Any]) -> None:
    item = first_item()
    arguments = {"id": item.pk, "status": "retired"}
    call(people["alice"], "item_update", arguments)
    decide(admin_as(people["carol"]), Approval.objects.get(), "_approve")
    Item.objects.filter(pk=item.pk).update(quantity=4242)

    asked_again = failed(call(people["alice"], "item_update", arguments))

    assert "waits for an approver" in asked_again
    assert Item.objects.get(pk=item.pk).status == item.status
    assert Approval.objects.filter(status=Approval.Status.PENDING).count() == 1


def test_the_approver_is_told_when_rows_changed_since_the_request(people: dict[str, Any]) -> None:
    item = first_item()
    call(people["alice"], "item_update", {"id": item.pk, "quantity": 59})
    Item.objects.filter(pk=item.pk).update(quantity=1234)
    approval = Approval.objects.get()

    page = admin_as(people["carol"]).get(f"/admin/mcp_tools/approval/{approval.pk}/change/").content.decode()

    assert 'id="approval-rows-changed"' in page and "quantity: 1234 → 59" in page


def test_the_caller_and_outsiders_may_not_decide(people: dict[str, Any]) -> None:
    item = first_item()
    alice = people["alice"]
    alice.is_staff = True
    alice.save()
    alice.groups.add(people["approvers"])
    alice = grant(alice, *APPROVER_PERMISSIONS)
    dave = grant(type(alice)._default_manager.create_user("dave", is_staff=True), *APPROVER_PERMISSIONS)
    call(alice, "item_update", {"id": item.pk, "quantity": 60})
    approval = Approval.objects.get()

    own = decide(admin_as(alice), approval, "_approve")
    outsider = admin_as(dave).post(f"/admin/mcp_tools/approval/{approval.pk}/decide/", {"_approve": "1"})

    assert "You may not decide this call" in own
    assert outsider.status_code == 404  # not one of dave's groups' approvals: as if it did not exist
    assert Approval.objects.get().status == Approval.Status.PENDING


def test_an_expired_request_is_asked_for_anew(people: dict[str, Any]) -> None:
    item = first_item()
    arguments = {"id": item.pk, "quantity": 61}
    call(people["alice"], "item_update", arguments)
    Approval.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    assert decide(admin_as(people["carol"]), Approval.objects.get(), "_approve").count("You may not decide") == 1
    call(people["alice"], "item_update", arguments)
    assert Approval.objects.filter(status=Approval.Status.PENDING).count() == 2


def test_a_call_too_large_to_review_is_refused_and_nothing_kept(people: dict[str, Any]) -> None:
    tool = Tool(
        name="add_category",
        callable_name="add_category",
        everyone=True,
        confirmation=Tool.Confirmation.APPROVER,
        approvers=people["approvers"],
    )
    tool.full_clean()
    tool.save()

    refused = failed(call(people["alice"], "add_category", {"name": "x" * 70_000}))

    assert refused == TOO_LARGE_TO_APPROVE
    assert not Approval.objects.exists()


def test_an_approver_tool_needs_its_approvers_group() -> None:
    tool = Tool(name="needs_group", kind=Tool.Kind.CALLABLE, callable_name="add", confirmation="approver")
    with pytest.raises(ValidationError) as raised:
        tool.full_clean()
    assert "approvers" in raised.value.message_dict


def test_the_policy_and_its_approvers_travel_in_tool_files(people: dict[str, Any]) -> None:
    document = export.export(export.tools_queryset(["item_update"]))
    [entry] = document.tools
    assert (entry["confirmation"], entry["approvers"]) == ("approver", "Order approvers")

    Tool.objects.filter(name="item_update").update(confirmation="none", approvers=None)
    importer.run(document, apply=True)
    tool = Tool.objects.get(name="item_update")
    assert (tool.confirmation, tool.approvers_id) == ("approver", people["approvers"].pk)

    entry["approvers"] = "Nobody by this name"
    refused = importer.run(document, apply=True)
    assert any("no group 'Nobody by this name'" in problem for problem in refused.errors)

"""A person's yes before a write: asked over a legacy session (elicitation/create) or with 2026-07-28's
input_required and a signed requestState; bound to tool, caller, arguments and rows; refused where nobody can
be asked. Every refused path leaves the database as it was."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.core import signing
from django.test import override_settings

from mcp_tools.access import confirmation_state
from mcp_tools.models import Tool, ToolCall
from mcp_tools.server.calls.confirmation import CANNOT_ASK, DECLINED, INPUT_KEY
from mcp_tools.server.calls.request_state import NOT_VALID
from tests.db import orm
from tests.live.query_data import grant
from tests.messages import modern_meta
from tests.queries import failed, ok, seed_users
from tests.testapp.models import Item, ItemNote
from tests.wire import Wire, connected

pytestmark = pytest.mark.django_db(transaction=True)

ASKS = {"elicitation": {}}
YES = {"action": "accept", "content": {"confirm": True}}


def confirmed_tools(**policies: str) -> None:
    """Set the confirmation of the shared test tools (they are made unconfirmed)."""
    for name, policy in policies.items():
        Tool.objects.filter(name=name).update(confirmation=policy)


@pytest.fixture
def people() -> dict[str, Any]:
    made = seed_users()
    confirmed_tools(item_update="", item_delete="", item_create="user")
    return made


def first_item(username: str) -> Item:
    return Item.objects.filter(account__manager__username=username).order_by("pk").first()


def item_state(pk: int) -> tuple[str, int]:
    item = Item.objects.get(pk=pk)
    return item.status, item.quantity


def audit_rows() -> list[tuple[str, str, Any]]:
    return list(ToolCall.objects.order_by("pk").values_list("outcome", "confirmation", "confirmed_by__username"))


async def question(wire: Wire, number: int = 0) -> dict[str, Any]:
    """The ``number``-th elicitation/create the server sent on the session (from 0), once it has come."""
    await wire.wait_for(lambda _message: len(wire.notifications("elicitation/create")) > number)
    return wire.notifications("elicitation/create")[number]


async def answer(wire: Wire, asked: dict[str, Any], result: dict[str, Any]) -> None:
    await wire.send({"jsonrpc": "2.0", "id": asked["id"], "result": result})


async def start_call(wire: Wire, name: str, arguments: dict[str, Any]) -> int:
    request_id = wire.new_id()
    await wire.send(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    )
    return request_id


# Legacy sessions: elicitation/create ------------------------------------------------------------------


async def test_an_update_asks_with_old_and_new_values_and_runs_on_yes(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = await connected(people["alice"], can_ask=True, capabilities=ASKS)

    request_id = await start_call(wire, "item_update", {"id": item.pk, "quantity": 99})
    asked = await question(wire)

    message = asked["params"]["message"]
    assert asked["params"]["mode"] == "form"
    assert f"item id={item.pk}: quantity: {item.quantity} → 99" in message
    assert asked["params"]["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"
    assert await orm(item_state, item.pk) == (item.status, item.quantity)  # nothing written while it waits
    await answer(wire, asked, YES)
    assert ok(await wire.response(request_id))["results"][0]["quantity"] == 99
    assert await orm(item_state, item.pk) == (item.status, 99)
    assert await orm(audit_rows) == [("ok", "elicitation", "alice")]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_no_or_a_dismissal_ends_the_call_with_nothing_written(people: dict[str, Any], action: str) -> None:
    item = await orm(first_item, "alice")
    wire = await connected(people["alice"], can_ask=True, capabilities=ASKS)

    request_id = await start_call(wire, "item_update", {"id": item.pk, "quantity": 99})
    await answer(wire, await question(wire), {"action": action})

    assert failed(await wire.response(request_id)) == DECLINED
    assert await orm(item_state, item.pk) == (item.status, item.quantity)
    assert await orm(audit_rows) == [("declined", "", None)]


async def test_an_unticked_form_is_a_no(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = await connected(people["alice"], can_ask=True, capabilities=ASKS)

    request_id = await start_call(wire, "item_update", {"id": item.pk, "quantity": 99})
    await answer(wire, await question(wire), {"action": "accept", "content": {"confirm": False}})

    assert failed(await wire.response(request_id)) == DECLINED
    assert await orm(item_state, item.pk) == (item.status, item.quantity)


async def test_a_client_that_cannot_ask_is_refused_clearly(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = await connected(people["alice"], can_ask=True)  # declares no elicitation

    assert failed(await wire.call("item_update", {"id": item.pk, "quantity": 99})) == CANNOT_ASK
    assert await orm(item_state, item.pk) == (item.status, item.quantity)
    assert await orm(audit_rows) == [("unconfirmed", "", None)]


async def test_a_client_declaring_only_url_elicitation_is_not_sent_a_form(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = await connected(people["alice"], can_ask=True, capabilities={"elicitation": {"url": {}}})

    assert failed(await wire.call("item_update", {"id": item.pk, "quantity": 99})) == CANNOT_ASK


async def test_rows_changed_while_the_person_thought_ask_again(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = await connected(people["alice"], can_ask=True, capabilities=ASKS)

    request_id = await start_call(wire, "item_update", {"id": item.pk, "status": "retired"})
    first = await question(wire)
    await orm(lambda: Item.objects.filter(pk=item.pk).update(quantity=12345))
    await answer(wire, first, YES)
    second = await question(wire, 1)  # the yes was for other rows: asked again, nothing written meanwhile

    assert second["id"] != first["id"]
    assert await orm(item_state, item.pk) == (item.status, 12345)
    await answer(wire, second, YES)
    assert ok(await wire.response(request_id))["results"][0]["status"] == "retired"


async def test_a_delete_says_what_goes_with_it_counted_per_model(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    await orm(lambda: [ItemNote.objects.create(item=item, text=f"note {n}") for n in range(3)])
    alice = await orm(grant, people["alice"], "testapp.delete_itemnote", "testapp.view_itemnote")
    wire = await connected(alice, can_ask=True, capabilities=ASKS)

    request_id = await start_call(wire, "item_delete", {"id": item.pk})
    asked = await question(wire)

    assert "1 item deleted in all" in asked["params"]["message"]
    assert "3 item notes deleted in all" in asked["params"]["message"]
    await answer(wire, asked, {"action": "decline"})
    assert failed(await wire.response(request_id)) == DECLINED
    assert await orm(lambda: (Item.objects.filter(pk=item.pk).exists(), ItemNote.objects.count())) == (True, 3)


async def test_reads_and_writes_set_to_none_run_at_once(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    await orm(lambda: confirmed_tools(item_update="none"))
    wire = await connected(people["alice"], can_ask=True, capabilities=ASKS)

    assert ok(await wire.call("items", {"limit": 1}))["count"] >= 1
    assert ok(await wire.call("item_update", {"id": item.pk, "quantity": 7}))["results"][0]["quantity"] == 7
    assert wire.notifications("elicitation/create") == []


@override_settings(MCP_TOOLS={"MAX_PENDING_QUESTIONS": 2})
async def test_questions_waiting_at_once_are_capped_per_session(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = await connected(people["alice"], can_ask=True, capabilities=ASKS)

    waiting = [await start_call(wire, "item_update", {"id": item.pk, "quantity": n}) for n in (1, 2)]
    await question(wire, 1)
    third = await start_call(wire, "item_update", {"id": item.pk, "quantity": 3})

    assert "Too many questions" in failed(await wire.response(third))
    for request_id in waiting:
        wire.session.in_flight[request_id].task.cancel()
    await asyncio.gather(*(f.task for f in list(wire.session.in_flight.values())), return_exceptions=True)
    assert await orm(item_state, item.pk) == (item.status, item.quantity)


@override_settings(MCP_TOOLS={"CONFIRMATION_SECONDS": 0.05})
async def test_a_question_nobody_answers_expires(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = await connected(people["alice"], can_ask=True, capabilities=ASKS)

    request_id = await start_call(wire, "item_update", {"id": item.pk, "quantity": 99})
    asked = await question(wire)

    assert "in time" in failed(await wire.response(request_id))
    await answer(wire, asked, YES)  # too late: it answers nothing
    assert await orm(item_state, item.pk) == (item.status, item.quantity)
    assert await orm(audit_rows) == [("unconfirmed", "", None)]


# 2026-07-28: input_required and a signed requestState ----------------------------------------------------


def modern_call(name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, **extra, "_meta": modern_meta(capabilities=ASKS)}


def answered(state: str, result: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"inputResponses": {INPUT_KEY: result or YES}, "requestState": state}


async def ask_modern(wire: Wire, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = await wire.request("tools/call", modern_call(name, arguments))
    result = reply["result"]
    assert result["resultType"] == "input_required", result
    return result


async def test_a_modern_call_answers_input_required_and_runs_on_the_retry(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = Wire(people["alice"])

    asked = await ask_modern(wire, "item_update", {"id": item.pk, "quantity": 42})
    request = asked["inputRequests"][INPUT_KEY]
    assert request["method"] == "elicitation/create"
    assert f"quantity: {item.quantity} → 42" in request["params"]["message"]
    assert await orm(item_state, item.pk) == (item.status, item.quantity)

    reply = await wire.request(
        "tools/call", modern_call("item_update", {"id": item.pk, "quantity": 42}, **answered(asked["requestState"]))
    )
    assert reply["result"]["resultType"] == "complete"
    assert ok(reply)["results"][0]["quantity"] == 42
    assert await orm(audit_rows) == [("asked", "", None), ("ok", "elicitation", "alice")]


async def test_a_modern_no_runs_nothing(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = Wire(people["alice"])
    asked = await ask_modern(wire, "item_update", {"id": item.pk, "quantity": 42})

    retry = modern_call(
        "item_update", {"id": item.pk, "quantity": 42}, **answered(asked["requestState"], {"action": "decline"})
    )
    assert failed(await wire.request("tools/call", retry)) == DECLINED
    assert await orm(item_state, item.pk) == (item.status, item.quantity)


async def test_a_modern_client_without_elicitation_is_refused(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = Wire(people["alice"])
    params = {"name": "item_update", "arguments": {"id": item.pk, "quantity": 42}, "_meta": modern_meta()}

    assert failed(await wire.request("tools/call", params)) == CANNOT_ASK


async def test_a_yes_binds_to_its_arguments_tool_caller_and_time(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    other = await orm(lambda: Item.objects.filter(account__manager__username="alice").order_by("pk")[1])
    alice, bob = Wire(people["alice"]), Wire(people["bob"])
    asked = await ask_modern(alice, "item_update", {"id": item.pk, "quantity": 42})
    state = asked["requestState"]
    before = await orm(lambda: list(Item.objects.order_by("pk").values()))

    attempts = [
        ("item_update", {"id": item.pk, "quantity": 43}),  # other arguments
        ("item_update", {"id": other.pk, "quantity": 42}),  # another row
        ("item_delete", {"id": item.pk}),  # another tool
    ]
    for name, arguments in attempts:
        reply = await alice.request("tools/call", modern_call(name, arguments, **answered(state)))
        assert reply["result"]["resultType"] == "input_required", (name, arguments, reply)
    # Another caller: bob may not even see the row, and is told no more than that.
    bobs = await bob.request(
        "tools/call", modern_call("item_update", {"id": item.pk, "quantity": 42}, **answered(state))
    )
    assert failed(bobs) == f"No item with id={item.pk}."
    tampered = state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB")
    forged = signing.dumps({"tool": "item_update"}, salt="another.salt")
    # A state that fails its integrity check is refused (-32602), its message giving no reason.
    for bad in (tampered, forged, "", "x" * 40_000):
        reply = await alice.request(
            "tools/call", modern_call("item_update", {"id": item.pk, "quantity": 42}, **answered(bad))
        )
        assert reply["error"] == {"code": -32602, "message": NOT_VALID}
    with override_settings(MCP_TOOLS={"CONFIRMATION_SECONDS": -1}):  # the yes has expired
        reply = await alice.request(
            "tools/call", modern_call("item_update", {"id": item.pk, "quantity": 42}, **answered(state))
        )
        assert reply["result"]["resultType"] == "input_required"

    assert await orm(lambda: list(Item.objects.order_by("pk").values())) == before


async def test_a_yes_runs_once_and_a_replay_asks_again(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = Wire(people["alice"])
    asked = await ask_modern(wire, "item_update", {"id": item.pk, "quantity": 42})
    retry = modern_call("item_update", {"id": item.pk, "quantity": 42}, **answered(asked["requestState"]))

    assert ok(await wire.request("tools/call", retry))["results"][0]["quantity"] == 42
    await orm(lambda: Item.objects.filter(pk=item.pk).update(quantity=1))
    replayed = await wire.request("tools/call", retry)

    assert replayed["result"]["resultType"] == "input_required"
    assert await orm(item_state, item.pk) == (item.status, 1)


async def test_a_modern_yes_for_rows_that_changed_asks_again(people: dict[str, Any]) -> None:
    item = await orm(first_item, "alice")
    wire = Wire(people["alice"])
    asked = await ask_modern(wire, "item_update", {"id": item.pk, "status": "retired"})
    await orm(lambda: Item.objects.filter(pk=item.pk).update(quantity=777))

    reply = await wire.request(
        "tools/call",
        modern_call("item_update", {"id": item.pk, "status": "retired"}, **answered(asked["requestState"])),
    )

    assert reply["result"]["resultType"] == "input_required"
    assert await orm(item_state, item.pk) == (item.status, 777)


def test_a_state_carries_its_binding_signed_and_nothing_else_opens_it() -> None:
    binding = confirmation_state.Binding("t", 1, 2, "AccessToken:3", "args", "rows")
    state = confirmation_state.issue(binding)

    opened = confirmation_state.open_state(state)
    assert opened is not None and opened.binding == binding
    assert confirmation_state.open_state(state + "x") is None
    assert confirmation_state.open_state(signing.dumps({"tool": "t"}, salt=confirmation_state.SALT)) is None
    assert confirmation_state.open_state(None) is None


def test_new_writes_ask_the_user_and_existing_tools_keep_running_unconfirmed(people: dict[str, Any]) -> None:
    from mcp_tools.tools.entries import confirmation_of

    assert confirmation_of(Tool.objects.get(name="item_update")) == "user"  # left to the default: a write
    assert confirmation_of(Tool.objects.get(name="items")) == "none"  # a read
    assert confirmation_of(Tool.objects.get(name="account_create")) == "none"  # chosen: none


def test_the_tool_list_names_the_writes_nobody_confirms_and_filters_by_who_confirms(
    people: dict[str, Any], admin_client: Any
) -> None:
    Tool.objects.filter(name="item_delete").update(confirmation=Tool.Confirmation.NONE)

    page = admin_client.get("/admin/mcp_tools/tool/").content.decode()
    unconfirmed = admin_client.get("/admin/mcp_tools/tool/?confirmation=unconfirmed_writes")
    by_user = admin_client.get("/admin/mcp_tools/tool/?confirmation=user")

    # account_create and item_delete write and are set to none; item_update and item_create ask the user.
    assert "2 tool(s) that write run with nobody confirming their calls: account_create, item_delete." in page
    assert [tool.name for tool in unconfirmed.context["cl"].result_list] == ["account_create", "item_delete"]
    assert [tool.name for tool in by_user.context["cl"].result_list] == ["item_create", "item_update"]

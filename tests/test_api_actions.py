"""API-action tools answer as the REST API answers over HTTP: the same rows, the same refusals, the same
validation messages, for every action and every kind of caller."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.core.cache import cache

from mcp_tools.models import AccessToken, ToolCall
from tests.api_actions import (
    MISSING,
    NOT_FOUND,
    PEOPLE,
    TOOLS,
    http,
    messages_of,
    reload,
    seed,
    twin,
    without_own_values,
)
from tests.db import db_call
from tests.live.asgi_http import HttpClient, request
from tests.queries import failed, ok
from tests.testapp.api import PingThrottle
from tests.testapp.models import Item
from tests.websocket import HOST, Connect, WSClient, login_cookie
from tests.wire import connected

pytestmark = pytest.mark.django_db(transaction=True)

REFUSED = {401, 403, 404, 405}
FULL = {"account": "@own", "name": "Renamed", "status": "retired", "price": "9.99", "quantity": 5, "notes": None}

# (tool, target of a detail action or None, arguments); "@kind" names the account of that kind.
CASES: list[tuple[str, str | None, dict[str, Any]]] = [
    ("items_list", None, {}),
    ("items_list", None, {"status": "active", "ordering": "-price,name"}),
    ("items_list", None, {"search": "gadget", "page_size": 20}),
    ("items_list", None, {"status__in": "draft,retired", "price_min": 3, "price_max": 8}),
    *[("items_get", target, {}) for target in ("own", "locked", "other", "missing")],
    ("items_create", None, {"account": "@own", "name": "Fresh", "price": "4.20", "status": "active"}),
    ("items_create", None, {"account": "@locked", "name": "Fresh", "price": "4.20"}),
    ("items_create", None, {"account": "@other", "name": "Fresh", "price": "4.20"}),
    ("items_create", None, {"account": "@own", "name": "forbidden", "price": "abc"}),
    *[("items_update", target, FULL) for target in ("own", "locked", "other", "missing")],
    *[("items_patch", target, {"status": "retired"}) for target in ("own", "locked", "other", "missing")],
    ("items_patch", "own", {"price": "123456789012.00"}),
    ("items_patch", "own", {"name": "forbidden"}),
    *[("items_delete", target, {}) for target in ("own", "locked", "other", "missing")],
    *[("items_rename", target, {"name": "Fresh name"}) for target in ("own", "locked", "other", "missing")],
    ("items_rename", "own", {"name": ""}),
    ("accounts_list", None, {}),
    ("accounts_list", None, {"limit": 1}),
]


def case_id(case: tuple[str, str | None, dict[str, Any]]) -> str:
    tool, target, arguments = case
    return "-".join([tool, target or "", ",".join(sorted(arguments))]).replace("--", "-").strip("-")


def resolve(arguments: dict[str, Any], accounts: dict[str, int]) -> dict[str, Any]:
    return {k: accounts[v[1:]] if isinstance(v, str) and v.startswith("@") else v for k, v in arguments.items()}


def item_state(pk: int) -> dict[str, Any] | None:
    row = Item.objects.filter(pk=pk).values("account_id", "name", "status", "price", "quantity", "notes").first()
    return dict(row) if row else None


def assert_same_answer(reply: dict[str, Any], status: int, body: Any) -> None:
    if status in REFUSED:
        assert failed(reply) == NOT_FOUND
    elif status == 400:
        text = failed(reply)
        assert text.startswith("The API refused the input. "), text
        for message in messages_of(body):
            assert message in text, (message, text)
    elif status == 204:
        assert ok(reply) == {"deleted": True}
    elif isinstance(body, list):  # an unpaginated list: the tool's result is an object holding it
        assert ok(reply) == {"results": body}
    elif isinstance(body, dict) and "results" in body:
        result = ok(reply)
        assert result["results"] == body["results"]
        assert result.get("count") == body.get("count")
        assert ("nextCursor" in result) == bool(body.get("next"))
    else:
        assert status in (200, 201), (status, body)
        assert without_own_values(ok(reply)) == without_own_values(body)


@pytest.mark.parametrize("person", PEOPLE)
@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
async def test_a_tool_call_answers_as_the_http_request_does(
    person: str, case: tuple[str, str | None, dict[str, Any]]
) -> None:
    seeded = await db_call(seed)
    user = seeded["people"][person]
    tool, target, arguments = case
    arguments = resolve(arguments, seeded["accounts"])
    if target is None:
        http_pk = tool_pk = None
    elif target == "missing":
        http_pk = tool_pk = MISSING
    else:
        http_pk, tool_pk = await db_call(twin, target), await db_call(twin, target)

    status, body = await db_call(http, user, tool, arguments, http_pk)
    wire = await connected(await db_call(reload, user))
    reply = await wire.call(tool, {**arguments, **({"pk": tool_pk} if tool_pk is not None else {})})

    assert_same_answer(reply, status, body)
    if http_pk is not None and http_pk != MISSING:
        assert await db_call(item_state, http_pk) == await db_call(item_state, tool_pk)


def test_every_case_table_tool_is_a_seeded_tool() -> None:
    assert {tool for tool, _target, _arguments in CASES} <= set(TOOLS)


async def test_the_matrix_sees_refusals_and_successes_for_every_kind_of_caller() -> None:
    """The table is worth its cost only if it holds both answers: check a few cells outright."""
    seeded = await db_call(seed)
    people = seeded["people"]
    own, other = await db_call(twin, "own"), await db_call(twin, "other")
    locked = await db_call(twin, "locked")

    assert (await db_call(http, people["mia"], "items_get", {}, own))[0] == 200
    assert (await db_call(http, people["mia"], "items_get", {}, other))[0] == 404
    assert (await db_call(http, people["mia"], "items_patch", {"status": "retired"}, locked))[0] == 403
    assert (await db_call(http, people["nora"], "items_list", {}))[0] == 200
    assert (await db_call(http, people["nora"], "items_create", {"name": "x"}))[0] == 403
    assert (await db_call(http, people["root"], "items_delete", {}, other))[0] == 204
    assert (await db_call(http, people["ivy"], "items_list", {}))[1]["count"] == 0


async def test_a_refused_write_on_an_existing_object_reads_as_one_on_a_missing_object_and_is_audited() -> None:
    seeded = await db_call(seed)
    locked = await db_call(twin, "locked")
    wire = await connected(await db_call(reload, seeded["people"]["mia"]))

    forbidden = await wire.call("items_patch", {"pk": locked, "status": "retired"})
    missing = await wire.call("items_patch", {"pk": MISSING, "status": "retired"})
    others = await wire.call("items_patch", {"pk": await db_call(twin, "other"), "status": "retired"})

    assert forbidden["result"] == missing["result"] == others["result"]
    assert failed(forbidden) == NOT_FOUND
    assert await db_call(item_state, locked) == {
        "account_id": seeded["accounts"]["locked"],
        "name": "Twin",
        "status": "active",
        "price": Decimal("3.50"),
        "quantity": 2,
        "notes": "twin",
    }
    outcomes = await db_call(
        lambda: list(ToolCall.objects.order_by("pk").values_list("tool_name", "outcome", "message"))
    )
    assert outcomes == [("items_patch", "error", NOT_FOUND)] * 3


async def test_over_streamable_http_a_token_holder_pages_through_the_same_rows_as_the_api() -> None:
    seeded = await db_call(seed)
    mia = seeded["people"]["mia"]
    client = HttpClient(await db_call(lambda: AccessToken.objects.issue(mia, name="tests")[1]))
    await client.initialize("2025-11-25")
    status, body = await db_call(http, mia, "items_list", {"ordering": "-price", "page_size": 20})
    rows: list[dict[str, Any]] = []
    arguments: dict[str, Any] = {"ordering": "-price", "page_size": 6}

    for request_id in range(1, 10):
        reply = await client.send(request(request_id, "tools/call", {"name": "items_list", "arguments": arguments}))
        page = ok(reply.json())
        rows += page["results"]
        if "nextCursor" not in page:
            break
        arguments = {**arguments, "cursor": page["nextCursor"]}
    await client.close()

    assert status == 200
    assert rows == body["results"]
    assert len(rows) == 16  # Mia's own and locked items, and no one else's


async def test_the_views_own_throttle_refuses_the_call_where_it_refuses_the_http_request(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}
    }
    monkeypatch.setattr(PingThrottle, "timer", staticmethod(lambda: 1_800_000_000.25))
    seeded = await db_call(seed)
    mia, bob = seeded["people"]["mia"], seeded["people"]["bob"]
    wire = await connected(await db_call(reload, mia))

    replies = [await wire.call("caller_ping", {}) for _ in range(3)]
    others = await (await connected(await db_call(reload, bob))).call("caller_ping", {})
    cache.clear()
    answers = [await db_call(http, mia, "caller_ping", {}) for _ in range(3)]

    assert [ok(reply) for reply in replies[:2]] == [{"pong": "mia"}] * 2
    assert [status for status, _body in answers] == [200, 200, 429]
    refused = failed(replies[2])
    assert refused == answers[2][1]["detail"] == "Request was throttled. Expected available in 60 seconds."
    assert ok(others) == {"pong": "bob"}  # the throttle counts each caller's requests, as over HTTP
    outcomes = await db_call(lambda: list(ToolCall.objects.order_by("pk").values_list("outcome", flat=True)))
    assert outcomes == ["ok", "ok", "error", "ok"]


async def test_the_view_sees_the_caller_and_the_credential_the_call_came_with(ws_connect: Connect) -> None:
    seeded = await db_call(seed)
    mia = seeded["people"]["mia"]
    first, _ = await db_call(lambda: AccessToken.objects.issue(mia, name="first"))
    second, raw = await db_call(lambda: AccessToken.objects.issue(mia, name="second"))
    client = HttpClient(raw)
    await client.initialize("2025-11-25")
    by_token = ok((await client.send(request(1, "tools/call", {"name": "caller_whoami", "arguments": {}}))).json())
    await client.close()
    communicator, accepted, _ = await ws_connect([HOST, await db_call(login_cookie, mia)])
    assert accepted
    browser = WSClient(communicator)
    await browser.initialize()
    by_cookie = ok(await browser.request("tools/call", {"name": "caller_whoami", "arguments": {}}))

    assert by_token == {"user": "mia", "auth": "AccessToken", "auth_pk": second.pk}
    assert second.pk != first.pk
    assert by_cookie == {"user": "mia", "auth": None, "auth_pk": None}

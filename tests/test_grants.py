"""Who sees and calls which tool: grants, the superuser and staff settings, permission classes, and
list_changed told only to the callers whose own list changed."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, Group, Permission

from mcp_tools.access import permissions
from mcp_tools.access.credentials import USER_INACTIVE
from mcp_tools.access.permissions import BasePermission, HasToolGrant
from mcp_tools.exceptions import INVALID_PARAMS, UNAUTHENTICATED
from mcp_tools.models import AccessToken, GroupGrant, ModelQuery, Tool, UserGrant
from mcp_tools.tools.entries import Entry, Grants
from mcp_tools.tools.registry import registry
from mcp_tools.tools.spec import ToolSpec
from tests.db import db_call
from tests.live.asgi_http import HttpClient, Response, modern_headers, modern_request, request
from tests.messages import LIST_CHANGED
from tests.websocket import Connect, WSClient, heard_once, listed, pong, ws_headers
from tests.wire import Wire

pytestmark = pytest.mark.django_db(transaction=True)

LATEST = "2025-11-25"
DRAFT = 1
PONG = {"jsonrpc": "2.0", "id": "ping", "result": {}}
DENIED, UNKNOWN = "hidden", "absent"  # the same length, so that even Content-Length cannot tell them apart
GRANTED_TO_ALICE = ["mine", "open", "sales"]
EVERY_ENABLED_TOOL = ["hidden", "mine", "open", "sales"]
DEFAULT_CLASSES = [
    "mcp_tools.access.permissions.IsAuthenticated",
    "mcp_tools.access.permissions.HasToolGrant",
    "mcp_tools.access.permissions.HasModelPermissions",
]


class ReadOnlyTools(BasePermission):
    """Only tools that declare themselves read-only (a site's own rule, named by dotted path)."""

    def has_permission(self, user: Any, tool: Any) -> bool:
        return tool.spec.annotations.get("readOnlyHint") is True


@dataclass
class People:
    """alice (in sales), bob (in support), carol (in no group), staff (is_staff), root (superuser)."""

    users: dict[str, Any]
    tokens: dict[str, str]
    sales: Group
    support: Group

    def __getattr__(self, name: str) -> Any:
        try:
            return self.users[name]
        except KeyError:
            raise AttributeError(name) from None


@pytest.fixture
def people(django_user_model: Any) -> People:
    manager = django_user_model.objects
    users = {
        "alice": manager.create_user("alice"),
        "bob": manager.create_user("bob"),
        "carol": manager.create_user("carol"),
        "staff": manager.create_user("staff", is_staff=True),
        "root": manager.create_superuser("root", "root@example.com", "pw"),
    }
    sales, support = Group.objects.create(name="sales"), Group.objects.create(name="support")
    users["alice"].groups.add(sales)
    users["bob"].groups.add(support)
    tokens = {name: AccessToken.objects.issue(user, name="tests")[1] for name, user in users.items()}
    return People(users, tokens, sales, support)


def add_tool(name: str, **fields: Any) -> Tool:
    return Tool.objects.create(name=name, callable_name="add", input_schema=registry.get("add").input_schema, **fields)


@pytest.fixture
def granted(people: People) -> None:
    """mine: granted to alice; sales: to the group sales; open: to everyone; hidden: to nobody; off: disabled."""
    UserGrant.objects.create(tool=add_tool("mine"), user=people.alice)
    GroupGrant.objects.create(tool=add_tool("sales"), group=people.sales)
    add_tool("open", everyone=True)
    add_tool("hidden")
    add_tool("off", everyone=True, enabled=False)


OpenSession = Callable[..., Awaitable[WSClient]]


@pytest.fixture
def session(ws_connect: Connect, people: People) -> OpenSession:
    """Opens an initialized WebSocket session as one of ``people`` (None: no credentials)."""

    async def open_session(username: str | None, version: Any = LATEST) -> WSClient:
        communicator, accepted, _ = await ws_connect(ws_headers(people.tokens[username] if username else None))
        assert accepted
        client = WSClient(communicator)
        if version == DRAFT:
            await client.request("initialize", {"protocolVersion": DRAFT, "capabilities": {}})
        else:
            await client.initialize(version)
        return client

    return open_session


async def names(client: WSClient) -> list[str]:
    return sorted(await listed(client))


def mcp_setting(settings: Any, **values: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, **values}


def unknown_tool(request_id: Any, name: str) -> dict[str, Any]:
    message = f"Unknown tool: {name}"
    error = {"code": INVALID_PARAMS, "message": message, "data": {"reason": message}}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def renamed(value: Any, old: str, new: str) -> Any:
    return json.loads(json.dumps(value).replace(old, new))


def groups_tool(**fields: Any) -> Tool:
    """A model-query tool listing auth groups; callers also need auth.view_group."""
    tool = Tool.objects.create(name="groups", kind=Tool.Kind.MODEL_QUERY, **fields)
    ModelQuery.objects.create(tool=tool, model="auth.Group", output_fields=["id", "name"])
    return tool


# Deny by default ---------------------------------------------------------------------------------


async def test_a_tool_granted_to_nobody_is_absent_from_every_users_list(session, granted):
    for username in ("alice", "bob", "carol", "staff"):
        client = await session(username)
        assert DENIED not in await names(client), username


@pytest.mark.parametrize("version", [LATEST, DRAFT], ids=["2025-11-25", "draft"])
async def test_an_ungranted_tool_answers_a_websocket_call_exactly_like_an_unknown_name(session, granted, version):
    client = await session("bob", version)

    async def call(name: str) -> Any:
        await client.send(request("call", "tools/call", {"name": name, "arguments": {"a": 1, "b": 2}}))
        return await client.receive()

    denied, unknown = await call(DENIED), await call(UNKNOWN)

    assert denied == unknown_tool("call", DENIED)
    assert denied == renamed(unknown, UNKNOWN, DENIED)


async def test_an_ungranted_tool_answers_a_legacy_http_call_exactly_like_an_unknown_name(people, granted):
    http = HttpClient(people.tokens["bob"])
    await http.initialize(LATEST)

    async def call(name: str) -> Response:
        return await http.send(request("call", "tools/call", {"name": name, "arguments": {"a": 1, "b": 2}}))

    denied, unknown = await call(DENIED), await call(UNKNOWN)
    await http.close()

    assert (denied.status, denied.json()) == (200, unknown_tool("call", DENIED))
    assert (denied.status, denied.headers) == (unknown.status, unknown.headers)
    assert denied.body == unknown.body.replace(UNKNOWN.encode(), DENIED.encode())


async def test_an_ungranted_tool_answers_a_modern_http_call_exactly_like_an_unknown_name(people, granted):
    http = HttpClient(people.tokens["bob"])

    async def call(name: str) -> Response:
        message = modern_request("call", "tools/call", {"name": name, "arguments": {"a": 1, "b": 2}})
        return await http.send(message, headers=modern_headers("tools/call", name))

    denied, unknown = await call(DENIED), await call(UNKNOWN)
    await http.close()

    assert denied.json()["error"] == unknown_tool("call", DENIED)["error"]
    assert (denied.status, denied.headers) == (unknown.status, unknown.headers)
    assert denied.body == unknown.body.replace(UNKNOWN.encode(), DENIED.encode())


async def test_an_ungranted_tool_never_runs(session, granted, monkeypatch):
    ran: list[str] = []
    monkeypatch.setattr("mcp_tools.server.calls.run.execute", lambda *args, **kwargs: ran.append("ran"))
    client = await session("bob")

    reply = await client.request("tools/call", {"name": DENIED, "arguments": {"a": 1, "b": 2}})

    assert (reply["error"]["code"], ran) == (INVALID_PARAMS, [])


# Grants --------------------------------------------------------------------------------------------


async def test_a_user_grant_shows_and_runs_the_tool_for_that_user_only(session, granted):
    alice, bob = await session("alice"), await session("bob")

    assert "mine" in await names(alice)
    assert "mine" not in await names(bob)
    reply = await alice.request("tools/call", {"name": "mine", "arguments": {"a": 2, "b": 3}})
    assert reply["result"] == {
        "content": [{"type": "text", "text": "5"}],
        "structuredContent": {"result": 5},
        "isError": False,
    }


async def test_a_group_grant_shows_the_tool_to_the_groups_members_only(session, granted):
    alice, bob, carol = await session("alice"), await session("bob"), await session("carol")

    assert ("sales" in await names(alice), "sales" in await names(bob), "sales" in await names(carol)) == (
        True,
        False,
        False,
    )


async def test_everyone_means_every_authenticated_user(session, granted):
    carol = await session("carol")

    assert await names(carol) == ["open"]


async def test_each_user_sees_exactly_their_grants(session, granted):
    seen = {username: await names(await session(username)) for username in ("alice", "bob", "carol", "staff")}

    assert seen == {"alice": GRANTED_TO_ALICE, "bob": ["open"], "carol": ["open"], "staff": ["open"]}


async def test_everyone_reaches_anonymous_callers_when_anonymous_access_is_allowed(session, granted, settings):
    mcp_setting(settings, ALLOW_ANONYMOUS=True)
    anonymous = await session(None)

    assert await names(anonymous) == ["open"]
    reply = await anonymous.request("tools/call", {"name": "sales", "arguments": {"a": 1, "b": 2}})
    assert reply["error"] == unknown_tool(None, "sales")["error"]


@pytest.mark.parametrize(("allowed", "expected"), [(True, True), (False, False)])
def test_everyone_covers_anonymous_callers_only_where_anonymous_access_is_allowed(settings, allowed, expected):
    mcp_setting(settings, ALLOW_ANONYMOUS=allowed)
    entry = Entry(id=1, kind=Tool.Kind.CALLABLE, spec=ToolSpec(name="t"), grants=Grants(True))

    assert HasToolGrant().has_permission(AnonymousUser(), entry) is expected


@pytest.mark.parametrize(("see_all", "expected"), [(True, EVERY_ENABLED_TOOL), (False, ["open"])])
async def test_superusers_see_every_enabled_tool_unless_told_otherwise(session, granted, settings, see_all, expected):
    mcp_setting(settings, SUPERUSERS_SEE_ALL=see_all)
    root = await session("root")

    assert await names(root) == expected


@pytest.mark.parametrize(("see_all", "expected"), [(False, ["open"]), (True, EVERY_ENABLED_TOOL)])
async def test_staff_see_only_their_grants_unless_staff_see_all_is_on(session, granted, settings, see_all, expected):
    mcp_setting(settings, STAFF_SEE_ALL=see_all)
    staff = await session("staff")

    assert await names(staff) == expected


async def test_an_inactive_superuser_is_refused_every_request_even_with_every_grant(granted, people):
    root = people.root
    root.is_active = False
    wire = Wire(root)

    reply = await wire.request("tools/list")

    assert reply["error"] == {"code": UNAUTHENTICATED, "message": USER_INACTIVE}


# Permission classes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        ([*DEFAULT_CLASSES, "tests.test_grants.ReadOnlyTools"], ["sales"]),
        (["mcp_tools.access.permissions.IsAuthenticated", "tests.test_grants.ReadOnlyTools"], ["hidden", "sales"]),
        (DEFAULT_CLASSES, GRANTED_TO_ALICE),
        ([], []),
    ],
    ids=["grant and read-only", "read-only without grants", "defaults", "none"],
)
async def test_every_permission_class_must_agree(session, granted, settings, classes, expected):
    await db_call(lambda: Tool.objects.filter(name__in=["sales", DENIED]).update(read_only_hint=True))
    mcp_setting(settings, PERMISSION_CLASSES=classes)
    alice = await session("alice")

    assert await names(alice) == expected


async def test_a_model_query_tool_needs_both_a_grant_and_the_model_permission(session, people):
    def setup() -> None:
        groups_tool(everyone=True)
        Tool.objects.create(name="groups_hidden", kind=Tool.Kind.MODEL_QUERY)
        ModelQuery.objects.create(
            tool=Tool.objects.get(name="groups_hidden"), model="auth.Group", output_fields=["id", "name"]
        )
        people.bob.user_permissions.add(Permission.objects.get(codename="view_group"))

    await db_call(setup)
    alice, bob = await session("alice"), await session("bob")

    assert (await names(alice), await names(bob)) == ([], ["groups"])
    reply = await bob.request("tools/call", {"name": "groups", "arguments": {}})
    assert reply["result"]["structuredContent"]["count"] == 2


# Precise list_changed ------------------------------------------------------------------------------


async def test_granting_a_tool_to_a_group_tells_only_its_members(session, granted, people):
    alice, bob = await session("alice"), await session("bob")

    await db_call(GroupGrant.objects.create, tool=await db_call(Tool.objects.get, name=DENIED), group=people.sales)

    assert sorted(await heard_once(alice)) == sorted([DENIED, *GRANTED_TO_ALICE])
    assert await pong(bob) == PONG


async def test_granting_a_tool_to_a_user_tells_only_that_user(session, granted, people):
    alice, bob = await session("alice"), await session("bob")

    await db_call(UserGrant.objects.create, tool=await db_call(Tool.objects.get, name=DENIED), user=people.bob)

    assert sorted(await heard_once(bob)) == [DENIED, "open"]
    assert await pong(alice) == PONG


async def test_adding_a_user_to_a_group_tells_that_user_only(session, granted, people):
    alice, bob = await session("alice"), await session("bob")

    await db_call(people.bob.groups.add, people.sales)

    assert sorted(await heard_once(bob)) == ["open", "sales"]
    assert await pong(alice) == PONG


async def test_adding_a_member_from_the_groups_side_tells_that_member_only(session, granted, people):
    alice, carol = await session("alice"), await session("carol")

    await db_call(people.sales.user_set.add, people.carol)

    assert sorted(await heard_once(carol)) == ["open", "sales"]
    assert await pong(alice) == PONG


async def test_removing_a_user_from_a_group_tells_that_user_only(session, granted, people):
    alice, bob = await session("alice"), await session("bob")

    await db_call(people.alice.groups.remove, people.sales)

    assert sorted(await heard_once(alice)) == ["mine", "open"]
    assert await pong(bob) == PONG


async def test_editing_a_tool_tells_only_those_who_see_it(session, granted):
    alice, bob = await session("alice"), await session("bob")

    def retitle() -> None:
        tool = Tool.objects.get(name="mine")
        tool.title = "Mine, retitled"
        tool.save()

    await db_call(retitle)

    assert (await heard_once(alice))["mine"]["title"] == "Mine, retitled"
    assert await pong(bob) == PONG


async def test_a_change_that_alters_nobodys_list_tells_nobody(session, granted, people):
    alice, bob = await session("alice"), await session("bob")
    hidden = await db_call(Tool.objects.get, name=DENIED)

    # alice already sees "open" through everyone: granting it to her group changes nothing she sees.
    await db_call(GroupGrant.objects.create, tool=await db_call(Tool.objects.get, name="open"), group=people.sales)
    await db_call(UserGrant.objects.create, tool=hidden, user=people.alice)

    assert sorted(await heard_once(alice)) == sorted([DENIED, *GRANTED_TO_ALICE])
    assert await pong(bob) == PONG


async def test_a_user_permission_change_tells_the_user_it_affects(session, people):
    await db_call(groups_tool, everyone=True)
    alice, bob = await session("alice"), await session("bob")

    await db_call(people.bob.user_permissions.add, await db_call(Permission.objects.get, codename="view_group"))

    assert list(await heard_once(bob)) == ["groups"]
    assert await pong(alice) == PONG


async def test_a_group_permission_change_tells_the_groups_members(session, people):
    await db_call(groups_tool, everyone=True)
    alice, bob = await session("alice"), await session("bob")

    await db_call(people.support.permissions.add, await db_call(Permission.objects.get, codename="view_group"))

    assert list(await heard_once(bob)) == ["groups"]
    assert await pong(alice) == PONG


async def test_a_user_made_staff_is_told_when_staff_see_every_tool(session, granted, people, settings):
    mcp_setting(settings, STAFF_SEE_ALL=True)
    alice, bob = await session("alice"), await session("bob")

    people.bob.is_staff = True
    await db_call(people.bob.save)

    assert sorted(await heard_once(bob)) == EVERY_ENABLED_TOOL
    assert await pong(alice) == PONG


async def test_a_login_tells_nobody(session, granted, people):
    alice = await session("alice")

    await db_call(people.alice.save, update_fields=["last_login"])
    await db_call(UserGrant.objects.create, tool=await db_call(Tool.objects.get, name=DENIED), user=people.alice)

    assert sorted(await heard_once(alice)) == sorted([DENIED, *GRANTED_TO_ALICE])


async def test_every_session_of_the_user_is_told(session, granted, people):
    alices = [await session("alice") for _ in range(3)]
    bob = await session("bob")

    await db_call(GroupGrant.objects.create, tool=await db_call(Tool.objects.get, name=DENIED), group=people.sales)

    for alice in alices:
        assert sorted(await heard_once(alice)) == sorted([DENIED, *GRANTED_TO_ALICE])
    assert await pong(bob) == PONG


async def test_a_change_to_a_users_groups_reloads_that_user_once_however_many_sessions(
    session, granted, people, monkeypatch, settings
):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CONNECTIONS_PER_USER": 100}
    await db_call(GroupGrant.objects.create, tool=await db_call(Tool.objects.get, name=DENIED), group=people.support)
    alices = [await session("alice") for _ in range(50)]
    bob = await session("bob")
    reloaded: list[Any] = []
    fresh = permissions._fresh

    def counted(model: Any, pk: Any) -> Any:
        reloaded.append(pk)
        return fresh(model, pk)

    monkeypatch.setattr(permissions, "_fresh", counted)

    await db_call(people.alice.groups.add, people.support)

    for alice in alices:
        assert await alice.receive() == LIST_CHANGED
    assert reloaded == [people.alice.pk]
    assert await pong(bob) == PONG
    assert sorted(await listed(alices[0])) == sorted([DENIED, *GRANTED_TO_ALICE])


async def test_a_change_for_every_user_leaves_anonymous_sessions_and_later_changes_working(
    session, granted, people, settings
):
    mcp_setting(settings, ALLOW_ANONYMOUS=True)
    anonymous, alice = await session(None), await session("alice")

    await db_call(people.support.delete)  # anyone's access may have changed
    await db_call(UserGrant.objects.create, tool=await db_call(Tool.objects.get, name=DENIED), user=people.alice)

    assert sorted(await heard_once(alice)) == sorted([DENIED, *GRANTED_TO_ALICE])
    assert await pong(anonymous) == PONG
    assert await names(anonymous) == ["open"]


async def test_an_event_that_cannot_be_acted_on_is_logged_and_later_changes_are_still_told(
    session, granted, people, monkeypatch, caplog
):
    alice = await session("alice")

    def unavailable(model: Any, pk: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(permissions, "_fresh", unavailable)
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        await db_call(people.alice.groups.add, people.support)
        await db_call(UserGrant.objects.create, tool=await db_call(Tool.objects.get, name=DENIED), user=people.alice)

        assert sorted(await heard_once(alice)) == sorted([DENIED, *GRANTED_TO_ALICE])
    assert [record.getMessage() for record in caplog.records if record.name == "mcp_tools"] == [
        "Could not act on a tool change event"
    ]


async def test_saving_a_tool_without_changing_its_definition_tells_nobody(session, granted, people):
    alice, root = await session("alice"), await session("root")

    await db_call(lambda: Tool.objects.get(name="open").save())
    await db_call(UserGrant.objects.create, tool=await db_call(Tool.objects.get, name=DENIED), user=people.alice)

    assert sorted(await heard_once(alice)) == sorted([DENIED, *GRANTED_TO_ALICE])
    assert await pong(root) == PONG


# Instructions -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("Use mine, then open.", ["alice", "root"]),
        ("Use open. Never hidden.", ["root"]),  # a full stop after a name hides nothing
        ("Try off-season prices with off.", []),  # a disabled tool is no one's to learn of
        ("Ask about sales figures.", ["alice", "root"]),  # a word that is a tool's name counts as naming it
        ("Amounts are decimal strings.", ["alice", "bob", "carol", "root"]),
    ],
)
async def test_instructions_naming_a_tool_are_withheld_from_callers_who_may_not_list_it(
    settings: Any, granted: None, people: People, text: str, told: list[str]
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INSTRUCTIONS": text}
    heard = {}
    for name in ("alice", "bob", "carol", "root"):
        initialized = (await Wire(people.users[name]).initialize(LATEST))["result"]
        discovered = (await Wire(people.users[name]).modern("server/discover"))["result"]
        heard[name] = (initialized.get("instructions"), discovered.get("instructions"))

    assert heard == {name: (text, text) if name in told else (None, None) for name in heard}


# Combined permission classes ----------------------------------------------------------------------


class NamedOpen(BasePermission):
    """A site's own rule: the tool named "open"."""

    def has_permission(self, user: Any, tool: Any) -> bool:
        return tool.name == "open"


ONLY_OPEN = permissions.IsAuthenticated & NamedOpen
GRANTED_OR_STAFF = permissions.IsAuthenticated & (permissions.HasToolGrant | permissions.IsStaffUser)
ALL_BUT_OPEN = permissions.IsAuthenticated & ~NamedOpen


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("ONLY_OPEN", {"alice": ["open"], "staff": ["open"], "carol": ["open"]}),
        ("GRANTED_OR_STAFF", {"alice": GRANTED_TO_ALICE, "staff": EVERY_ENABLED_TOOL, "carol": ["open"]}),
        (
            "ALL_BUT_OPEN",
            {
                "alice": ["hidden", "mine", "sales"],
                "staff": ["hidden", "mine", "sales"],
                "carol": ["hidden", "mine", "sales"],
            },
        ),
    ],
)
async def test_permission_classes_combine_with_and_or_and_not(session, granted, settings, rule, expected):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PERMISSION_CLASSES": [f"tests.test_grants.{rule}"]}

    seen = {name: await names(await session(name)) for name in expected}

    assert seen == expected

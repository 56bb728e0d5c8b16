"""Users, groups and tools: tools/list and tools/call, and changes to grants and group membership made in the
admin over HTTP, told to exactly the sessions whose list changed.

Each test runs on a live server over a real WebSocket, and in process over Streamable HTTP through each HTTP
door (tests/http_doors.py), the admin served through the same door; a WSGI door holds no stream, so its
sessions are told nothing and find each change by listing again."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model

from mcp_tools.exceptions import INVALID_PARAMS
from tests.db import db_call
from tests.http_doors import DOORS, application
from tests.live.admin_client import AdminClient, form_errors, form_fields
from tests.live.asgi_http import HttpClient
from tests.live.mcp_http import MCPHttp
from tests.live.websocket_client import MCPWebSocket, mcp_websocket

pytest_plugins = ["tests.live.fixtures"]
# The WebSocket runs against live servers; the HTTP doors run in this process.
pytestmark = pytest.mark.live

LATEST = "2025-11-25"
LIST_CHANGED = "notifications/tools/list_changed"
SHOWN_ONCE = re.compile(r"Copy this token now; it will not be shown again: <code>(mcp_[A-Za-z0-9_-]+)</code>")
CHANGE_PATH = re.compile(r"/(\d+)/change/$")
ADDED = {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False}

Fields = dict[str, list[str]]


@dataclass
class Matrix:
    """The access the server must grant, kept in step with every change the test makes in the admin.

    Tool names map to their grants; users to their groups. Superusers see every tool; staff only their
    grants (the defaults of SUPERUSERS_SEE_ALL and STAFF_SEE_ALL).
    """

    groups: dict[str, set[str]]
    user_grants: dict[str, set[str]]
    group_grants: dict[str, set[str]]
    everyone: set[str]
    staff: set[str] = field(default_factory=set)
    superusers: set[str] = field(default_factory=set)

    @property
    def tools(self) -> list[str]:
        return sorted(self.user_grants)

    def visible(self, user: str) -> list[str]:
        if user in self.superusers:
            return self.tools
        return [
            tool
            for tool in self.tools
            if tool in self.everyone or user in self.user_grants[tool] or self.groups[user] & self.group_grants[tool]
        ]


def starting_matrix() -> Matrix:
    """ann in sales, ben in support, cat in both, dan in none, eve staff, root superuser; five tools."""
    return Matrix(
        groups={
            "ann": {"sales"},
            "ben": {"support"},
            "cat": {"sales", "support"},
            "dan": set(),
            "eve": set(),
            "root": set(),
        },
        user_grants={"dans": {"dan"}, "sales": set(), "support": set(), "all": set(), "none": set()},
        group_grants={"dans": set(), "sales": {"sales"}, "support": {"support"}, "all": set(), "none": set()},
        everyone={"all"},
        staff={"eve", "root"},
        superusers={"root"},
    )


# The admin, as a browser drives it ---------------------------------------------------------------------


async def open_form(admin: AdminClient, path: str, form_id: str) -> Fields:
    return form_fields((await admin.get(path)).text, form_id)


async def submit(admin: AdminClient, path: str, fields: Fields) -> int:
    """Save a form with "Save and continue editing"; returns the pk of the saved object."""
    response = await admin.post(path, {**fields, "_continue": "Save and continue editing"})
    assert response.status_code == 302, form_errors(response.text)
    found = CHANGE_PATH.search(response.headers["location"])
    assert found is not None, response.headers["location"]
    return int(found.group(1))


async def edit(admin: AdminClient, model: str, pk: int, change: Callable[[Fields], None]) -> None:
    path = f"/admin/{model}/{pk}/change/"
    fields = await open_form(admin, path, f"{model.rpartition('/')[2]}_form")
    change(fields)
    await submit(admin, path, fields)


def add_row(fields: Fields, prefix: str, **values: Any) -> None:
    """Add a row to an inline, as its "Add another" link does."""
    index = int(fields[f"{prefix}-TOTAL_FORMS"][0])
    fields[f"{prefix}-TOTAL_FORMS"] = [str(index + 1)]
    fields |= {f"{prefix}-{index}-{name}": [str(value)] for name, value in values.items()}


def delete_row(fields: Fields, prefix: str, name: str, value: Any) -> None:
    """Tick "Delete" on the inline row whose ``name`` is ``value``."""
    [index] = [
        i for i in range(int(fields[f"{prefix}-TOTAL_FORMS"][0])) if fields[f"{prefix}-{i}-{name}"] == [str(value)]
    ]
    fields[f"{prefix}-{index}-DELETE"] = ["on"]


@dataclass
class World:
    """The matrix's users, groups and tools, created in the admin under names that start with ``prefix``."""

    admin: AdminClient
    prefix: str
    users: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)
    tools: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)

    def tool_name(self, tool: str) -> str:
        return self.prefix + tool

    async def build(self, matrix: Matrix) -> None:
        for group in sorted(set().union(*matrix.groups.values())):
            fields = await open_form(self.admin, "/admin/auth/group/add/", "group_form")
            self.groups[group] = await submit(
                self.admin, "/admin/auth/group/add/", fields | {"name": [self.prefix + group]}
            )
        for user in matrix.groups:
            await self.add_user(user, matrix)
        for tool in matrix.tools:
            await self.add_tool(tool, matrix)

    async def add_user(self, user: str, matrix: Matrix) -> None:
        password = f"{user}-password"
        fields = await open_form(self.admin, "/admin/auth/user/add/", "user_form")
        fields |= {"username": [self.prefix + user], "password1": [password], "password2": [password]}
        self.users[user] = pk = await submit(self.admin, "/admin/auth/user/add/", fields)
        await edit(self.admin, "auth/user", pk, lambda fields: self.set_account(fields, user, matrix))
        response = await self.admin.post(
            "/admin/mcp_tools/accesstoken/add/", {"user": pk, "name": "matrix", "expires_at_0": "", "expires_at_1": ""}
        )
        assert response.status_code == 302, form_errors(response.text)
        shown = SHOWN_ONCE.search((await self.admin.get("/admin/mcp_tools/accesstoken/")).text)
        assert shown is not None
        self.tokens[user] = shown.group(1)

    def set_account(self, fields: Fields, user: str, matrix: Matrix) -> None:
        fields["groups"] = [str(self.groups[group]) for group in sorted(matrix.groups[user])]
        for flag, holders in (("is_staff", matrix.staff), ("is_superuser", matrix.superusers)):
            fields[flag] = ["on"] if user in holders else []

    async def add_tool(self, tool: str, matrix: Matrix) -> None:
        fields = await open_form(self.admin, "/admin/mcp_tools/tool/add/", "tool_form")
        fields |= {"name": [self.tool_name(tool)], "callable_name": ["add"], "input_schema": [""]}
        fields["everyone"] = ["on"] if tool in matrix.everyone else []
        for user in sorted(matrix.user_grants[tool]):
            add_row(fields, "user_grants", user=self.users[user])
        for group in sorted(matrix.group_grants[tool]):
            add_row(fields, "group_grants", group=self.groups[group])
        self.tools[tool] = await submit(self.admin, "/admin/mcp_tools/tool/add/", fields)


WEBSOCKET = "websocket"
ADMIN = {"username": "matrix-admin", "password": "matrix-admin-password"}


# The site in process keeps its rows in the test database; the live server has its own.
IN_PROCESS = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=[WEBSOCKET, *(pytest.param(door, marks=IN_PROCESS) for door in DOORS)])
def transport(request: pytest.FixtureRequest) -> str:
    """A real WebSocket to a live server, or Streamable HTTP in process through one HTTP door."""
    return str(request.param)


def world_prefix(request: pytest.FixtureRequest) -> str:
    return re.sub(r"\W", "", request.node.originalname.removeprefix("test_"))[:24] + "_"


@pytest.fixture
async def world(transport: str, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    """A fresh matrix for each test, its names prefixed by the test's own, built in the admin: the module's
    live server's, or the one served in process through the HTTP door."""
    async with AsyncExitStack() as stack:
        if transport == WEBSOCKET:
            base_url = request.getfixturevalue("uvicorn_server").base_url
            credentials = request.getfixturevalue("live_site").seeded.admin
            admin = await stack.enter_async_context(AdminClient(base_url))
        else:
            await db_call(lambda: get_user_model().objects.create_superuser(**ADMIN))
            credentials = ADMIN
            in_process = httpx.ASGITransport(app=application(transport))
            admin = await stack.enter_async_context(AdminClient("http://testserver", transport=in_process))
        await admin.login(**credentials)
        built = World(admin, world_prefix(request))
        await built.build(starting_matrix())
        yield built


Client = MCPWebSocket | MCPHttp
Sessions = dict[str, Client]


@pytest.fixture
async def sessions(transport: str, world: World, request: pytest.FixtureRequest) -> AsyncIterator[Sessions]:
    """One initialized session per user of the matrix."""
    async with AsyncExitStack() as stack:
        opened: Sessions = {}
        for user, token in world.tokens.items():
            if transport == WEBSOCKET:
                url = request.getfixturevalue("uvicorn_server").ws_url()
                opened[user] = await stack.enter_async_context(mcp_websocket(url, token))
            else:
                opened[user] = MCPHttp(HttpClient(token, door=transport))
                stack.push_async_callback(opened[user].close)
            await opened[user].initialize(LATEST)
        yield opened


async def listed(client: Client, world: World) -> list[str]:
    tools, _pages = await client.list_tools()
    return sorted(tool["name"].removeprefix(world.prefix) for tool in tools if tool["name"].startswith(world.prefix))


def unknown_tool(request_id: int, name: str) -> dict[str, Any]:
    message = f"Unknown tool: {name}"
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": INVALID_PARAMS, "message": message, "data": {"reason": message}},
    }


# The matrix ------------------------------------------------------------------------------------------


async def test_each_user_lists_exactly_the_tools_granted_to_them(sessions, world):
    matrix = starting_matrix()

    seen = {user: await listed(client, world) for user, client in sessions.items()}

    assert seen == {user: matrix.visible(user) for user in matrix.groups}
    assert seen == {
        "ann": ["all", "sales"],
        "ben": ["all", "support"],
        "cat": ["all", "sales", "support"],
        "dan": ["all", "dans"],
        "eve": ["all"],
        "root": ["all", "dans", "none", "sales", "support"],
    }


async def test_each_user_calls_exactly_the_tools_granted_to_them(sessions, world):
    matrix = starting_matrix()

    for user, client in sessions.items():
        for tool in matrix.tools:
            name = world.tool_name(tool)
            reply = await client.request("tools/call", {"name": name, "arguments": {"a": 2, "b": 3}})
            granted = tool in matrix.visible(user)
            expected = (
                {"jsonrpc": "2.0", "id": client.next_id, "result": ADDED}
                if granted
                else unknown_tool(client.next_id, name)
            )
            assert reply == expected, (user, tool)


# Changes made in the admin while sessions are connected -------------------------------------------------


async def told_exactly(sessions: Sessions, told: set[str], change: str) -> None:
    """Each of ``told`` hears one list_changed; every session then answers a ping with nothing before it. Where
    the door holds no stream, nobody is told."""
    for user in sorted(told):
        if hears(sessions[user]):
            notification = await sessions[user].next_notification(LIST_CHANGED)
            assert notification == {"jsonrpc": "2.0", "method": LIST_CHANGED}, (change, user)
    for user, client in sessions.items():
        await client.request("ping")
        assert await quiet(client), (change, user)


def hears(client: Client) -> bool:
    return not isinstance(client, MCPHttp) or client.hears


async def quiet(client: Client) -> bool:
    """Nothing was said to ``client`` that the test did not read."""
    if isinstance(client, MCPHttp):
        return await client.quiet()
    return client.unsolicited == []


Change = Callable[[World, Matrix], Awaitable[None]]


async def grant_none_to_support(world: World, matrix: Matrix) -> None:
    await edit(
        world.admin,
        "mcp_tools/tool",
        world.tools["none"],
        lambda f: add_row(f, "group_grants", group=world.groups["support"]),
    )
    matrix.group_grants["none"].add("support")


async def add_dan_to_sales(world: World, matrix: Matrix) -> None:
    matrix.groups["dan"].add("sales")
    await edit(world.admin, "auth/user", world.users["dan"], lambda f: world.set_account(f, "dan", matrix))


async def remove_cat_from_support(world: World, matrix: Matrix) -> None:
    matrix.groups["cat"].discard("support")
    await edit(world.admin, "auth/user", world.users["cat"], lambda f: world.set_account(f, "cat", matrix))


async def delete_dans_grant(world: World, matrix: Matrix) -> None:
    await edit(
        world.admin,
        "mcp_tools/tool",
        world.tools["dans"],
        lambda f: delete_row(f, "user_grants", "user", world.users["dan"]),
    )
    matrix.user_grants["dans"].discard("dan")


async def make_ben_staff(world: World, matrix: Matrix) -> None:
    matrix.staff.add("ben")
    await edit(world.admin, "auth/user", world.users["ben"], lambda f: world.set_account(f, "ben", matrix))


async def retitle_sales(world: World, matrix: Matrix) -> None:
    await edit(world.admin, "mcp_tools/tool", world.tools["sales"], lambda f: f.update(title=["Sales figures"]))


async def grant_all_to_sales_too(world: World, matrix: Matrix) -> None:
    await edit(
        world.admin,
        "mcp_tools/tool",
        world.tools["all"],
        lambda f: add_row(f, "group_grants", group=world.groups["sales"]),
    )
    matrix.group_grants["all"].add("sales")


async def take_all_from_everyone(world: World, matrix: Matrix) -> None:
    await edit(world.admin, "mcp_tools/tool", world.tools["all"], lambda f: f.update(everyone=[]))
    matrix.everyone.discard("all")


# Each change and who must hear of it: those whose list changed (an edited definition is a change for all
# who see it; saving a tool's grants in its change form leaves its definition as it was).
CHANGES: list[tuple[Change, set[str]]] = [
    (grant_none_to_support, {"ben", "cat"}),
    (add_dan_to_sales, {"dan"}),
    (remove_cat_from_support, {"cat"}),
    (delete_dans_grant, {"dan"}),
    (make_ben_staff, set()),
    (retitle_sales, {"ann", "cat", "dan", "root"}),
    (grant_all_to_sales_too, set()),
    (take_all_from_everyone, {"ben", "eve"}),
]


async def test_admin_changes_tell_exactly_the_sessions_whose_list_changed(sessions, world):
    matrix = starting_matrix()

    for change, told in CHANGES:
        await change(world, matrix)

        await told_exactly(sessions, told, change.__name__)
        seen = {user: await listed(client, world) for user, client in sessions.items()}
        assert seen == {user: matrix.visible(user) for user in sessions}, change.__name__

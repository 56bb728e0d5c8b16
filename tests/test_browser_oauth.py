"""Connecting an MCP client by OAuth as a person does: the official Python SDK's OAuth client, a real headless
Chromium and the demo site served by uvicorn.

The SDK runs as a desktop app (``tests.live.desktop_client``): it discovers and registers (DCR, or CIMD with
a metadata document the site fetches through tests/cimd.py), hands the authorization URL to the browser,
and waits at its loopback redirect URI. The browser signs in on the site's sign-in page and answers the
consent page by its buttons; nothing in between is patched and no header is rewritten.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from mcp import Client, MCPError
from playwright.sync_api import Page, expect

from mcp_tools.access.credentials import TOKEN_REVOKED
from mcp_tools.conf import DEFAULTS
from mcp_tools.transports.websocket import CLOSE_UNAUTHENTICATED
from tests.challenges import refused_token
from tests.cimd import write_documents
from tests.live.browser_pages import mcp_request, tool_names
from tests.live.consent_pages import answer, consent_page_for, sign_in
from tests.live.demo import seeded_demo
from tests.live.desktop_client import LOOPBACK_REDIRECT, AuthorizationRefused, DesktopClient, desktop_client
from tests.live.fresh_project import SUPERUSER_PASSWORD, FreshProject, fresh_oauth_project
from tests.live.node_client import FINISH_TIMEOUT, NodeClient
from tests.live.servers import ROOT, ServerProcess
from tests.live.websocket_client import mcp_websocket, websocket_closed

pytest_plugins = ["tests.live.fixtures", "tests.live.browser"]
pytestmark = pytest.mark.live

TIMEOUT = 10
CIMD_HOST = "client.example"
CIMD_CLIENT = f"https://{CIMD_HOST}/desktop/mcp.json"
CIMD_NAME = "Desktop client with a metadata document"
DCR_NAME = "Desktop client"
# Scoped to the customers each user manages (the demo's query scope), so alice and bob get different rows.
SCOPED_TOOL, SCOPED_ARGUMENTS = "find_customers", {"query": "@", "limit": 50}
# The demo keeps the default freshness; a second for the close to travel.
FRESHNESS_BOUND = DEFAULTS["FRESHNESS_SECONDS"] + 1


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The demo site's environment, with the CIMD client's document published where its fetcher reads it."""
    env, _database = seeded_demo(tmp_path_factory)
    documents = tmp_path_factory.mktemp("cimd") / "documents.json"
    write_documents(
        documents,
        {
            CIMD_CLIENT: {
                "client_id": CIMD_CLIENT,
                "client_name": CIMD_NAME,
                "redirect_uris": [LOOPBACK_REDIRECT],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            }
        },
    )
    return {**env, "MCP_TEST_CIMD_DOCUMENTS": str(documents), "CIMD_ALLOWED_HOSTS": CIMD_HOST}


@pytest.fixture
def app(demo_server: ServerProcess) -> Iterator[DesktopClient]:
    with desktop_client(demo_server.url("/mcp"), name=DCR_NAME) as connecting:
        yield connecting


async def listed_names(client: Client) -> list[str]:
    names: list[str] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        names.extend(tool.name for tool in page.tools)
        if (cursor := page.next_cursor) is None:
            return names


async def scoped_call(client: Client) -> Any:
    return (await client.call_tool(SCOPED_TOOL, SCOPED_ARGUMENTS)).structured_content


def scoped_call_as(server: ServerProcess, token: str) -> Any:
    """What the scoped tool answers the user of a site token."""
    params = {"name": SCOPED_TOOL, "arguments": SCOPED_ARGUMENTS}
    return mcp_request(server, token, "tools/call", params, **{"Mcp-Name": SCOPED_TOOL})["structuredContent"]


def last_call(env: dict[str, str], tool: str) -> Any:
    """The newest audit row of ``tool``: username, client, token id and outcome."""
    completed = subprocess.run(
        [sys.executable, "-m", "tests.live.mutate", "last-call", tool],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(completed.stdout)


def back_at_the_app(page: Page, app: DesktopClient) -> None:
    """The browser has arrived at the app's loopback redirect URI."""
    page.wait_for_url(re.compile(re.escape(app.callback.redirect_uri) + r"\?"))


def authorize(page: Page, app: DesktopClient, username: str) -> str:
    """Open the URL the SDK asked for, sign in as ``username`` and allow; the authorization URL."""
    url = app.authorization_url()
    page.goto(url)
    sign_in(page, username, username)  # the demo gives each user their name as password
    assert page.url == url  # back at the very request
    consent_page_for(page, username)
    answer(page, "Allow")
    back_at_the_app(page, app)
    return url


@pytest.mark.parametrize("registration", ["dcr", "cimd"])
def test_the_sdk_is_authorized_as_whoever_signs_in_and_allows_in_the_browser(
    demo_server: ServerProcess,
    demo_env: dict[str, str],
    demo_tokens: dict[str, str],
    page: Page,
    registration: str,
) -> None:
    cimd = registration == "cimd"
    with desktop_client(
        demo_server.url("/mcp"), name=DCR_NAME, client_metadata_url=CIMD_CLIENT if cimd else None
    ) as app:
        connected = app.connect()
        url = authorize(page, app, "alice")
        connected.result(TIMEOUT)
        listed = app.call(listed_names)
        found = app.call(scoped_call)
        audited = last_call(demo_env, SCOPED_TOOL)

    assert app.storage.client is not None
    client_id = app.storage.client.client_id
    assert (client_id == CIMD_CLIENT) is cimd
    registered = [step for step in app.exchanges if "/oauth/register/" in step]
    assert registered == ([] if cimd else [f"POST {demo_server.url('/oauth/register/')} -> 201"])
    assert url.startswith(demo_server.url("/oauth/authorize/?"))
    # The browser brought the code back, with the SDK's state and the issuer (RFC 9207).
    [arrival] = app.callback.arrivals
    assert sorted(arrival.params) == ["code", "iss", "state"]
    assert arrival.params["iss"] == demo_server.base_url
    # alice's tools and alice's rows, as her own site token gets them (and not bob's).
    assert listed == tool_names(demo_server, demo_tokens["alice"]) != tool_names(demo_server, demo_tokens["bob"])
    assert found == scoped_call_as(demo_server, demo_tokens["alice"]) != scoped_call_as(demo_server, demo_tokens["bob"])
    name = CIMD_NAME if cimd else DCR_NAME
    assert audited == {
        "username": "alice",
        "client": f"{name} ({client_id})",
        "token": None,
        "outcome": "ok",
    }


def test_the_forms_post_with_their_own_origin_and_the_way_back_carries_no_referrer(
    demo_server: ServerProcess, app: DesktopClient, page: Page
) -> None:
    # With "no-referrer" Chromium posted the consent form with "Origin: null", which the CSRF check
    # refuses with 403. The pages' policy, same-origin, keeps the Origin and the Referer for the site itself.
    connected = app.connect()
    url = app.authorization_url()
    page.goto(url)
    sign_in(page, "alice", "alice")
    consent_page_for(page, "alice")
    with page.expect_request(lambda request: request.method == "POST") as posted:
        answer(page, "Allow")
    back_at_the_app(page, app)
    connected.result(TIMEOUT)

    sent = posted.value.all_headers()
    assert urlsplit(posted.value.url).path == "/oauth/authorize/"
    assert (sent["origin"], sent["referer"]) == (demo_server.base_url, url)
    response = posted.value.response()
    assert response is not None
    assert (response.status, response.headers["referrer-policy"]) == (302, "same-origin")
    # The redirect to the app is cross-origin: the authorization request's address does not follow it.
    [arrival] = app.callback.arrivals
    assert "referer" not in arrival.headers
    assert "origin" not in arrival.headers


def test_deny_sends_access_denied_back_to_the_sdk(demo_server: ServerProcess, app: DesktopClient, page: Page) -> None:
    connected = app.connect()
    page.goto(app.authorization_url())
    sign_in(page, "alice", "alice")
    consent_page_for(page, "alice")

    answer(page, "Deny")

    back_at_the_app(page, app)
    # The SDK raises what its callback handler raised, out of the task group that holds its session.
    with pytest.raises(ExceptionGroup) as refused:
        connected.result(TIMEOUT)
    assert [(type(exc), exc.error) for exc in refused.value.exceptions] == [(AuthorizationRefused, "access_denied")]
    [arrival] = app.callback.arrivals
    assert arrival.params["error"] == "access_denied"
    assert "code" not in arrival.params
    assert app.storage.tokens == []
    assert not any(step.startswith("POST " + demo_server.url("/oauth/token/")) for step in app.exchanges)


def test_not_you_signs_out_and_the_next_person_to_sign_in_answers_the_same_request(
    demo_server: ServerProcess, demo_tokens: dict[str, str], app: DesktopClient, page: Page
) -> None:
    connected = app.connect()
    url = app.authorization_url()
    page.goto(url)
    sign_in(page, "alice", "alice")
    consent_page_for(page, "alice")

    page.get_by_role("button", name="Not you? Sign out").click()

    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert urlsplit(page.url).path == "/oauth/login/"
    sign_in(page, "bob", "bob")
    assert page.url == url
    consent_page_for(page, "bob")
    answer(page, "Allow")
    back_at_the_app(page, app)
    connected.result(TIMEOUT)

    assert app.call(listed_names) == tool_names(demo_server, demo_tokens["bob"])
    assert app.call(scoped_call) == scoped_call_as(demo_server, demo_tokens["bob"])
    assert len(app.callback.arrivals) == 1  # one answer, by bob


def test_revoking_in_the_browser_closes_the_apps_websocket_and_ends_its_http_session(
    demo_server: ServerProcess, page: Page
) -> None:
    with desktop_client(demo_server.url("/mcp"), name=DCR_NAME, mode="legacy") as app:
        connected = app.connect()
        authorize(page, app, "alice")
        connected.result(TIMEOUT)
        assert app.call(listed_names)
        [token] = app.storage.tokens
        assert app.storage.client is not None and app.session_id is not None
        opened = threading.Event()
        watching = app.run(lambda client: closed_when_revoked(demo_server, token.access_token, opened))
        assert opened.wait(TIMEOUT)

        page.goto(demo_server.url("/oauth/apps/"))
        row = page.get_by_role("row").filter(has_text=app.storage.client.client_id)
        row.get_by_role("button", name="Revoke").click()

        expect(page.get_by_text(f"{DCR_NAME} can no longer use your tools.")).to_be_visible()
        expect(page.get_by_role("row").filter(has_text=app.storage.client.client_id)).to_have_count(0)
        # Counted from the moment the page confirms the revocation.
        assert watching.result(FRESHNESS_BOUND) == (CLOSE_UNAUTHENTICATED, TOKEN_REVOKED)
        in_session = httpx.post(
            demo_server.url("/mcp"),
            json={"jsonrpc": "2.0", "id": 9, "method": "ping"},
            headers={
                "Authorization": f"Bearer {token.access_token}",
                "Accept": "application/json, text/event-stream",
                "Mcp-Session-Id": app.session_id,
                "MCP-Protocol-Version": "2025-11-25",
            },
            timeout=TIMEOUT,
        )
        assert (in_session.status_code, in_session.headers["www-authenticate"]) == (
            401,
            refused_token(origin=demo_server.base_url),
        )
        # The SDK's own session is refused too: its next request is answered 401, and it sends the person to
        # consent again (who declines this time).
        before = len(app.exchanges)
        relisting = app.run(listed_names)
        page.goto(app.authorization_url())
        consent_page_for(page, "alice")
        answer(page, "Deny")
        with pytest.raises(ExceptionGroup) as refused:
            relisting.result(TIMEOUT)

    assert [type(exc) for exc in refused.value.exceptions] == [AuthorizationRefused]
    assert app.exchanges[before] == f"POST {demo_server.url('/mcp')} -> 401"


async def closed_when_revoked(server: ServerProcess, token: str, opened: threading.Event) -> tuple[Any, Any]:
    """Open a WebSocket with the app's token, use it, and wait (within the freshness bound) for its close."""
    async with mcp_websocket(server.ws_url(), token) as ws:
        await ws.initialize()
        assert "result" in await ws.request("tools/list")
        opened.set()
        return await websocket_closed(ws, FRESHNESS_BOUND + TIMEOUT)


def test_a_signed_out_person_is_sent_to_sign_in_and_the_sign_in_page_says_why(
    demo_server: ServerProcess, app: DesktopClient, page: Page
) -> None:
    app.connect()
    url = app.authorization_url()

    response = page.goto(url)

    assert response is not None and response.status == 200
    assert urlsplit(page.url).path == "/oauth/login/"
    expect(page.get_by_text("Sign in to continue to the application that sent you here.")).to_be_visible()
    # The demo's look: its base.html (with the site's header) wraps the package's sign-in page.
    expect(page.get_by_role("link", name="Shop")).to_be_visible()


def test_the_typescript_sdk_is_authorized_in_the_browser_and_calls_tools_as_that_user(
    demo_server: ServerProcess, demo_tokens: dict[str, str], page: Page, tmp_path: Path
) -> None:
    client = NodeClient(demo_server.url("/mcp"), SCOPED_TOOL, SCOPED_ARGUMENTS, tmp_path / "oauth_client.log")
    try:
        url = client.next_message()["authorize"]
        page.goto(url)
        sign_in(page, "alice", "alice")
        consent_page_for(page, "alice")
        answer(page, "Allow")
        page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:\d+/callback\?"))
        expect(page.get_by_text("You can close this window")).to_be_visible()
        finished = client.next_message(FINISH_TIMEOUT)
    finally:
        client.close()

    assert url.startswith(demo_server.url("/oauth/authorize/?"))
    assert finished.keys() == {"tools", "result"}, finished
    assert finished["tools"] == tool_names(demo_server, demo_tokens["alice"])
    assert finished["result"]["structuredContent"] == scoped_call_as(demo_server, demo_tokens["alice"])
    assert not finished["result"].get("isError")


# A new project, set up as the documents say ------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreshProject]:
    with fresh_oauth_project(Path(tmp_path_factory.mktemp("fresh-oauth")) / "mysite") as built:
        yield built


def test_a_new_project_set_up_as_the_connectors_guide_says_signs_people_in_to_connect(
    fresh_site: FreshProject, page: Page
) -> None:
    [server] = fresh_site.servers
    assert fresh_site.installed[-1] == "django-mcp-tools[oauth]"
    # Its sign-in page renders, so the check that looks for it says nothing.
    assert "System check identified no issues" in fresh_site.run([fresh_site.python, "manage.py", "check"])

    with desktop_client(server.url("/mcp"), name=DCR_NAME) as app:
        connected = app.connect()
        page.goto(app.authorization_url())
        sign_in(page, "admin", SUPERUSER_PASSWORD)  # the README's superuser
        consent_page_for(page, "admin")
        answer(page, "Allow")
        back_at_the_app(page, app)
        connected.result(TIMEOUT)
        listed = app.call(listed_names)
        greeted = app.call(lambda client: client.call_tool("greet", {"name": "Ada"}))

    # The README's tool, granted to every signed-in user.
    assert listed == ["greet"]
    assert [(item.type, getattr(item, "text", None)) for item in greeted.content] == [("text", "Hello, Ada!")]


# Which tools the app gets -----------------------------------------------------------------------------------


def listed_tools(server: ServerProcess, token: str) -> list[dict[str, Any]]:
    """Every tool definition a site token's user lists, page after page."""
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    while True:
        result = mcp_request(server, token, "tools/list", params)
        found.extend(result["tools"])
        if not result.get("nextCursor"):
            return found
        params = {"cursor": result["nextCursor"]}


def read_only_names(server: ServerProcess, token: str) -> list[str]:
    tools = listed_tools(server, token)
    return [tool["name"] for tool in tools if tool.get("annotations", {}).get("readOnlyHint") is True]


async def unknown_to(client: Client, name: str) -> str:
    """What calling ``name`` answers: the error a tool that does not exist gets."""
    try:
        await client.call_tool(name, {})
    except MCPError as refused:
        return str(refused.error.message)
    raise AssertionError(f"{name} was called")


WRITE_TOOL = "api_mark_order_paid"  # alice's one tool that changes something


def test_narrowed_to_read_only_tools_a_write_tool_is_unknown_to_the_app_while_the_site_token_still_sees_it(
    demo_server: ServerProcess, demo_tokens: dict[str, str], app: DesktopClient, page: Page
) -> None:
    connected = app.connect()
    page.goto(app.authorization_url())
    sign_in(page, "alice", "alice")
    consent_page_for(page, "alice")

    page.get_by_label("Read-only tools only").check()
    answer(page, "Allow")
    back_at_the_app(page, app)
    connected.result(TIMEOUT)
    listed = app.call(listed_names)
    refused = app.call(lambda client: unknown_to(client, WRITE_TOOL))
    nonexistent = app.call(lambda client: unknown_to(client, "no_such_tool"))

    everything = tool_names(demo_server, demo_tokens["alice"])
    assert WRITE_TOOL in everything and WRITE_TOOL not in listed
    assert listed == read_only_names(demo_server, demo_tokens["alice"]) != everything
    assert refused.replace(WRITE_TOOL, "NAME") == nonexistent.replace("no_such_tool", "NAME")


def test_a_person_ticks_the_tools_an_app_may_use_and_changes_them_later_on_the_connected_apps_page(
    demo_server: ServerProcess, app: DesktopClient, page: Page
) -> None:
    connected = app.connect()
    page.goto(app.authorization_url())
    sign_in(page, "alice", "alice")
    consent_page_for(page, "alice")
    page.get_by_label("Only the tools I choose").check()
    answer(page, "Allow")  # nothing ticked yet: the page asks again
    expect(page.get_by_text("Choose at least one tool, or deny the application.")).to_be_visible()
    for name in ("order_stats", "find_customers"):
        page.get_by_role("checkbox", name=re.compile(rf"^{name}\b")).check()
    answer(page, "Allow")
    back_at_the_app(page, app)
    connected.result(TIMEOUT)
    chosen = app.call(listed_names)

    assert app.storage.client is not None
    page.goto(demo_server.url("/oauth/apps/"))
    row = page.get_by_role("row").filter(has_text=app.storage.client.client_id)
    expect(row).to_contain_text("find_customers, order_stats")
    row.get_by_role("link", name="Change").click()
    page.get_by_role("checkbox", name=re.compile(r"^order_stats\b")).uncheck()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(f"{DCR_NAME} now uses the tools you chose.")).to_be_visible()
    changed = app.call(listed_names)

    assert sorted(chosen) == ["find_customers", "order_stats"]
    assert changed == ["find_customers"]
